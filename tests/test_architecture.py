"""The layering rules of docs/architecture.md, checked on the import graph of `src/testtask` (read with `ast`).

- no import cycles (imports inside functions count too: they are the same dependency, only deferred);
- library code never imports the command line (`testtask.cli`);
- a paper package never imports another paper's package (shared machinery lives outside the papers);
- only the entry modules parse a command line (argparse, sys.argv): everything else a user runs is a `testtask`
  action (Hydra) or a Makefile target.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PAPERS = (
    "pretrain_on_test",
    "training_on_the_test_task",
    "train_before_test",
    "downstream_predictability",
    "proxy_tasks",
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path = SRC / "testtask") -> dict[str, set[str]]:
    """module -> the `testtask` modules it imports (a `from package import name` names the submodule if one exists)."""
    modules = {module_name(p): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative import
                    anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.add(sub if sub in modules else base)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _paper(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in PAPERS else None


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_the_graph_reader_sees_known_edges(graph):
    """The rules below are only as good as the graph: edges the code certainly has must be found."""
    assert "testtask.pipeline" in graph["testtask.cli"]
    assert "testtask.pretrain_on_test.kernel_sampler" in graph["testtask.pretrain_on_test.sampling"]
    assert "testtask.context" in graph["testtask.pipeline"]


def test_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles(graph):
    assert cycles(graph) == []


def test_library_code_never_imports_the_command_line(graph):
    offenders = sorted(
        m for m, targets in graph.items() if "testtask.cli" in targets and m != "testtask.__main__"
    )
    assert offenders == []


def test_papers_do_not_import_each_other(graph):
    sideways = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if (own := _paper(module))
        for target in targets
        if (other := _paper(target)) and other != own
    )
    assert sideways == []


def test_the_adding_a_figure_example_of_docs_architecture_works(tmp_path, monkeypatch):
    """Execute the example block of docs/architecture.md, register it, and build it through the pipeline."""
    import json
    import re

    from tests.conftest import write_accuracies
    from testtask.pipeline import build, compose
    from testtask.pretrain_on_test import registry

    doc = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc.split("## Adding a figure", 1)[1].split("\n## ", 1)[0]
    (code,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    namespace: dict = {}
    exec(compile(code, "docs/architecture.md", "exec"), namespace)  # noqa: S102 - our own documentation
    monkeypatch.setitem(registry.FIGURES, "mean-boost", namespace["figure_mean_boost"])

    results = tmp_path / "results"
    write_accuracies(results / "pretrain-on-test", "accuracies_from_paper", 50, 50, ["bert", "gpt2"], 3, 4)
    cfg = compose(
        [
            "paper=pretrain-on-test",
            "source=results",
            f"results_dir={results}",
            "results_run=null",
            f"figures_dir={tmp_path / 'figures'}",
        ]
    )
    assert [b["figure"] for b in build(cfg, "figure", ["mean-boost"])] == ["mean-boost"]
    out = tmp_path / "figures" / "pretrain-on-test" / "results"  # results_run=null: no run level
    numbers = json.loads((out / "figure-mean-boost.json").read_text())
    assert len(numbers["mean_boost"]) == 3 and (out / "figure-mean-boost.png").is_file()


ADDING_A_SETTING_SCRIPT = r"""
import json, sys
from pathlib import Path

from tests.conftest import write_accuracies
from testtask import papers, protocol_tables, schema
from testtask.context import Context
from testtask.outputs import save_figure
from testtask.pipeline import build, check, compose, config_schema
from testtask.pretrain_on_test import accuracies, registry
from testtask.schema import ConfigError

tmp = Path(sys.argv[1])


def figure_mean_boost(ctx: Context) -> dict:
    import matplotlib.pyplot as plt

    data = accuracies.load(ctx.collection_root(ctx.settings.collections.few_shot))
    per_task = (data["extra"] - data["base"]).groupby(data["dataset"])
    boost = getattr(per_task, ctx.settings.mean_boost.average)().sort_values()
    fig, ax = plt.subplots()
    ax.barh(boost.index, boost.to_numpy())
    numbers = {"average": str(ctx.settings.mean_boost.average), "boost": {k: float(v) for k, v in boost.items()}}
    save_figure(fig, ctx.out_dir, "figure-mean-boost", numbers)
    return numbers


registry.FIGURES["mean-boost"] = figure_mean_boost
write_accuracies(tmp / "results" / "pretrain-on-test", "accuracies_from_paper", 50, 50, ["bert", "gpt2"], 3, 5)
base = ["paper=pretrain-on-test", "source=results", f"results_dir={tmp / 'results'}", "results_run=null",
        f"figures_dir={tmp / 'figures'}"]
out = {}
for preset in ("authors", "paper_text"):
    build(compose([*base, f"protocol={preset}"]), "figure", ["mean-boost"])
    folder = tmp / "figures" / "pretrain-on-test" / ("results" if preset == "authors" else "results.paper_text")
    out[preset] = json.loads((folder / "figure-mean-boost.json").read_text())
data = accuracies.load(tmp / "results" / "pretrain-on-test" / "accuracies_from_paper")
per_task = (data["extra"] - data["base"]).groupby(data["dataset"])
expected = {"authors": per_task.mean(), "paper_text": per_task.median()}
for preset, numbers in out.items():
    assert numbers["average"] == {"authors": "mean", "paper_text": "median"}[preset]
    assert numbers["boost"] == {k: float(v) for k, v in expected[preset].items()}, preset
assert out["authors"]["boost"] != out["paper_text"]["boost"]
try:
    check(compose([*base, "pretrain_on_test.mean_boost.average=mode"]))
except ConfigError as err:
    assert err.violations == ["pretrain_on_test.mean_boost.average = 'mode': expected one of mean, median"]
else:
    raise AssertionError("a bad value passed")
table = protocol_tables.read_table(Path("docs/protocols/pretrain-on-test-analysis.md"))
compose_plain = lambda o: schema.plain(compose(["paper=pretrain-on-test", *o]), exclude=("hydra",))
assert protocol_tables.drift(table, "table", compose_plain, protocol_tables.PRESET) == []
leaves = schema.leaves(config_schema(), schema.plain(compose([]), exclude=("hydra",)))
assert leaves["pretrain_on_test.mean_boost.average"] is not None
assert schema.defaults_in_code(papers.get("pretrain-on-test").settings) == []
print("ok")
"""


def _apply_adding_a_setting(root: Path, section: str) -> set[str]:
    """Apply the blocks of docs/architecture.md's "Adding a setting" to the files their captions name; the files
    changed."""
    import re

    changed = set()
    blocks = re.findall(
        r"\n(`[^`\n]+`[^\n]*|and, at the end of `class Settings`):\n\n```(\w+)\n(.*?)```", section, flags=re.S
    )
    last_file = None
    for caption, lang, body in blocks:
        match = re.match(r"`([^`]+)`", caption)
        if match and "/" in match.group(1):
            last_file = match.group(1)
        path = root / last_file
        text = path.read_text(encoding="utf-8")
        if "before `class Settings`" in caption:
            marker = "@section\nclass Settings:"
            assert marker in text
            text = text.replace(marker, body + "\n\n" + marker)
        elif lang == "markdown":
            lines = text.rstrip("\n").split("\n")
            last = max(i for i, line in enumerate(lines) if line.startswith("|"))
            lines.insert(last + 1, body.rstrip("\n"))
            text = "\n".join(lines) + "\n"
        else:  # at the end of the file (a YAML section, the last class's field)
            text = text.rstrip("\n") + "\n" + body
        path.write_text(text, encoding="utf-8")
        changed.add(last_file)
    return changed


@pytest.mark.slow  # a copy of the repository and a subprocess that builds twice (36 s)
def test_the_adding_a_setting_example_of_docs_architecture_works_in_three_places(tmp_path):
    """In a copy of the repository: the example's blocks change the YAML (value and preset), the schema and the
    protocol table, and nothing else; the figure then reads the mean under the authors' code and the median under
    the text, a bad value is one line, the table passes its drift check, and the setting has no default in code."""
    import os
    import shutil
    import subprocess
    import sys

    root = tmp_path / "repo"
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=SRC.parent, capture_output=True, check=True)
    for rel in listed.stdout.decode().split("\0"):
        if rel and (SRC.parent / rel).is_file() and not rel.startswith(("results/", "notebooks/")):
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(SRC.parent / rel, root / rel)
    doc = (SRC.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc.split("## Adding a setting", 1)[1].split("\n## ", 1)[0]
    changed = _apply_adding_a_setting(root, section)
    assert changed == {
        "conf/pretrain_on_test/analysis.yaml",  # the value
        "conf/pretrain_on_test/protocol/paper_text.yaml",  # the text's value
        "src/testtask/pretrain_on_test/settings.py",  # the schema field
        "docs/protocols/pretrain-on-test-analysis.md",  # the protocol table row
    }
    env = {
        **os.environ,
        "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root}",
        "TESTTASK_ROOT": str(root),
        "MPLBACKEND": "Agg",
    }
    done = subprocess.run(
        [sys.executable, "-c", ADDING_A_SETTING_SCRIPT, str(tmp_path / "work")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]


def test_shared_machinery_imports_no_paper(graph):
    """`lm/` and `data/` sit below the papers: a paper may use them, never the other way round."""
    upward = sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        if module.split(".")[1:2] in (["lm"], ["data"])
        for target in targets
        if _paper(target)
    )
    assert upward == []


# Entry modules, the only ones that may parse a command line: the `testtask` command, the runners' Hydra main, the
# GPU preflight's command and the worker torchrun starts, the GPU bench's command.
COMMAND_LINE_MODULES = {
    "testtask.cli",
    "testtask.runners",
    "testtask.preflight.cli",
    "testtask.preflight.worker",
    "testtask.preflight.__main__",
    "testtask.gpu_bench.cli",
}


def command_line_readers(root: Path = SRC / "testtask") -> dict[str, list[str]]:
    """module (dotted, from `root`'s name down) -> what in it parses a command line: an `argparse` import, a
    `sys.argv` read (also through `from sys import argv`)."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        uses: list[str] = []
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                uses += [f"import {a.name}" for a in node.names if a.name.split(".")[0] == "argparse"]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                if (node.module or "").split(".")[0] == "argparse":
                    uses.append(f"from {node.module} import ...")
                elif node.module == "sys" and any(a.name == "argv" for a in node.names):
                    uses.append("from sys import argv")
            elif isinstance(node, ast.Attribute) and node.attr == "argv":
                if isinstance(node.value, ast.Name) and node.value.id == "sys":
                    uses.append(f"sys.argv (line {node.lineno})")
        if uses:
            parts = path.relative_to(root.parent).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = uses
    return found


def test_the_command_line_reader_finder_finds_them(tmp_path):
    pkg = tmp_path / "testtask"
    pkg.mkdir()
    (pkg / "a.py").write_text("import argparse\n")
    (pkg / "b.py").write_text("import sys\n\n\ndef main():\n    return sys.argv[1:]\n")
    (pkg / "c.py").write_text("from sys import argv\n")
    (pkg / "d.py").write_text("from argparse import ArgumentParser\n")
    (pkg / "e.py").write_text("import sys\n\nsys.exit(0)\n")
    assert set(command_line_readers(pkg)) == {"testtask.a", "testtask.b", "testtask.c", "testtask.d"}


def test_only_entry_modules_parse_a_command_line():
    """Hydra for everything a user runs with choices (`testtask action=...`, the runners); no library
    module has an argparse or sys.argv main of its own."""
    readers = command_line_readers()
    assert {"testtask.runners", "testtask.preflight.cli"} <= set(readers)  # the entry modules are seen
    offenders = {m: uses for m, uses in readers.items() if m not in COMMAND_LINE_MODULES}
    assert offenders == {}


def config_reads(source: str) -> list[int]:
    """Lines of `source` that read the untyped config through a context: an attribute `cfg` of a name `ctx`
    (`ctx.cfg`, `ctx.cfg["x"]`, `ctx.cfg.plan`)."""
    return sorted(
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and node.attr == "cfg"
        and isinstance(node.value, ast.Name)
        and node.value.id == "ctx"
    )


def test_the_config_read_finder_finds_them():
    snippet = 'def f(ctx):\n    a = ctx.settings.x\n    return ctx.cfg["x"], a\n\n\ndef g(ctx):\n    return ctx.cfg.plan\n'
    assert config_reads(snippet) == [3, 7]
    assert config_reads("def f(ctx, cfg):\n    return cfg.x, ctx.settings.cfg, ctx.config\n") == []


def test_paper_modules_read_typed_settings_not_the_config():
    """A paper's figures, tables and actions read `ctx.settings` (typed, read once by `PAPER.settings`),
    never `ctx.cfg`. The runners (`<paper>/runner/`) read their own run config and are not concerned."""
    offenders = {}
    for paper in PAPERS:
        root = SRC / "testtask" / paper
        for path in sorted(root.rglob("*.py")):
            if "runner" in path.relative_to(root).parts[:-1]:
                continue
            lines = config_reads(path.read_text(encoding="utf-8"))
            if lines:
                offenders[str(path.relative_to(SRC))] = lines
    assert offenders == {}
