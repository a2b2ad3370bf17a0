"""`make install` installs without bytecode and caches that of what the code loads (`bytecode.compile_imported`):
every module of the package and every library the code imports inside a function."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_architecture import module_name
from testtask import bytecode

SRC = REPO / "src" / "testtask"


def _imported_names(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        return [node.module]
    return []


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _third_party(name: str) -> bool:
    return name not in sys.stdlib_module_names and name not in ("testtask", "__future__")


def lazily_imported_libraries() -> set[str]:
    """Third-party libraries that some module of the package imports only inside a function (or not at all at
    import time), read from the source."""
    at_import, inside = set(), set()
    for path in SRC.rglob("*.py"):
        tree = ast.parse(path.read_text())
        executed = [n for n in tree.body if not _is_type_checking(n)]
        top = {
            m
            for n in executed
            if not isinstance(n, ast.FunctionDef | ast.ClassDef)
            for m in _imported_names(n)
        }
        for sub in executed:
            if isinstance(sub, ast.If | ast.Try):
                top |= {m for n in ast.walk(sub) for m in _imported_names(n)}
        at_import |= {m.split(".")[0] for m in top}
        inside |= {m.split(".")[0] for n in ast.walk(tree) for m in _imported_names(n)}
    return {m for m in inside - at_import if _third_party(m)}


def test_every_module_of_the_package_is_imported_but_main_modules():
    modules = set(bytecode.package_modules())
    on_disk = {module_name(p) for p in SRC.rglob("*.py") if p.name != "__main__.py"} - {"testtask"}
    assert modules == on_disk
    assert "testtask.pretrain_on_test.kernel" in modules
    assert not any(m.endswith("__main__") for m in modules)


def test_the_source_reading_finds_libraries_imported_inside_functions():
    # deepspeed is imported inside the fine-tuning functions only (it is slow to import and GPU-minded).
    assert "deepspeed" in lazily_imported_libraries()
    assert "numpy" not in lazily_imported_libraries()


def test_the_install_step_runs_compile_imported_without_pip_compiling():
    makefile = (REPO / "Makefile").read_text()
    assert re.search(r'PYTHONDONTWRITEBYTECODE= \$\(BIN\)/python -c "from testtask.bytecode import', makefile)
    installs = [line for line in makefile.splitlines() if re.search(r"pip install -q .*(torch|-e)", line)]
    # pip compiles unless told not to; uv compiles only when asked (--compile-bytecode)
    by_pip = [line for line in installs if "python -m pip" in line]
    by_uv = [line for line in installs if "/uv pip" in line]
    assert by_pip and all("--no-compile" in line for line in by_pip), by_pip
    assert by_uv and not any("--compile-bytecode" in line for line in by_uv), by_uv


@pytest.mark.slow
def test_compile_imported_caches_the_bytecode_of_the_package_and_of_every_lazily_imported_library(tmp_path):
    env = {
        **os.environ,
        "PYTHONPYCACHEPREFIX": str(tmp_path),
        "PYTHONDONTWRITEBYTECODE": "",
        "DS_ACCELERATOR": "cpu",
    }
    probe = (
        "import json, sys; from testtask.bytecode import compile_imported; compile_imported(); "
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, cwd=REPO, capture_output=True, text=True, check=True
    )
    loaded = set(json.loads(out.stdout.strip().splitlines()[-1]))
    assert lazily_imported_libraries() <= loaded, sorted(lazily_imported_libraries() - loaded)
    cached = {p.name for p in Path(tmp_path).rglob("*.pyc")}
    for module in ("kernel", "cli", "evaluator", "accelerator"):  # ours, lm_eval's and deepspeed's
        assert any(name.startswith(f"{module}.") for name in cached), module


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_the_install_takes_uv_and_falls_back_to_pip_or_takes_pip_when_told(installer):
    shown = subprocess.run(
        ["make", "-n", "-B", f"INSTALLER={installer}", ".venv/.installed-stamp"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert ("/uv pip install" in shown) is (installer == "uv"), shown
    # pip's install of the same pins: the fallback after uv, or the install itself
    assert "-m pip install -q --no-compile -c constraints.txt -e '.[dev,jax]'" in shown, shown
