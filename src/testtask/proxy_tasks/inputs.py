"""What the builders share: a matrix with the method's settings for it (`ctx.settings`: `settings.Settings`), the
checks that a matrix can serve the settings (each failure one line naming the key to change), ensemble tables,
plain-JSON settings."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pandas as pd
import yaml

from testtask.context import Context
from testtask.errors import InputError
from testtask.paths import conf_dir, resolve
from testtask.proxy_tasks.matrices import ScoreMatrix, load_matrix
from testtask.proxy_tasks.robustness import ensembles_from_wide, read_ensembles
from testtask.proxy_tasks.settings import Method, Reader, RobustnessMode


def labels(ctx: Context) -> dict[str, str]:
    """robustness.ensemble_labels as a plain dict (it goes to worker processes)."""
    return dict(ctx.settings.robustness.ensemble_labels)


def matrix_and_settings(ctx: Context, key: str) -> tuple[ScoreMatrix, Method]:
    """Matrix `key` and the method's settings with that matrix's overrides (`top_t`, `n_models`, `robustness`)."""
    return load_matrix(ctx, key), ctx.settings.method_for(key)


class SettingError(InputError, ValueError):
    """A setting that a matrix's data cannot serve; one line naming the key to change, its value and what fits."""


PREFIX = "proxy_tasks"
# the method's settings a matrix may override: its own key -> the section's key
OVERRIDES = {
    "top_t": "consistency.top_t",
    "n_models": "consistency.n_models",
    "robustness": "robustness.mode",
}


def method_key(ctx: Context, key: str, field: str) -> tuple[str, str]:
    """The config key that sets `field` of the method for matrix `key` (its own override when it has one, else the
    section's), and a hint where the matrix's own value goes."""
    entry = ctx.settings.matrix(key)
    own = f"{PREFIX}.matrices.{key}.{field}"
    csv = entry.reader == Reader.csv
    if getattr(entry, field) is not None:
        return own, f" (`{field}` of {key} in the user folder's matrices.yaml)" if csv else ""
    hint = f"its own {field} in the user folder's matrices.yaml" if csv else f"its own ({own})"
    return f"{PREFIX}.{OVERRIDES[field]}", f"; or give matrix {key!r} {hint}"


def check_target(matrix: ScoreMatrix, target: str, where: str) -> None:
    """`target` (the value of setting `where`) is a task of `matrix`, else a SettingError naming its tasks."""
    if target not in matrix.scores.columns:
        tasks = ", ".join(matrix.scores.columns)
        raise SettingError(
            f"{PREFIX}.{where} = {target!r}: expected a task of matrix {matrix.key!r} ({matrix.source}): {tasks}"
        )


def check_top_t(ctx: Context, matrix: ScoreMatrix, top_t: int) -> None:
    """Algorithm 1's t is at most the matrix's candidate tasks (all but the target)."""
    candidates = matrix.scores.shape[1] - 1
    if top_t > candidates:
        key, hint = method_key(ctx, matrix.key, "top_t")
        raise SettingError(
            f"{key} = {top_t}: expected at most {candidates}, the candidate tasks of matrix {matrix.key!r} (its "
            f"{candidates + 1} tasks less the target){hint}"
        )


def check_fits(ctx: Context, matrix: ScoreMatrix, method: Method) -> None:
    """The leave-one-model-out fits can run on `matrix` with `method`: Algorithm 1's subsets of n models fit in the
    models left after holding one out, its t in the candidate tasks, and the robustness step has its inputs."""
    models = len(matrix.scores)
    if method.uses_algorithm_1:
        if method.n_models > models - 1:
            key, hint = method_key(ctx, matrix.key, "n_models")
            raise SettingError(
                f"{key} = {method.n_models}: expected at most {models - 1} for matrix {matrix.key!r} ({models} "
                f"models, one held out in each leave-one-model-out fit){hint}"
            )
        check_top_t(ctx, matrix, method.top_t)
    if method.robustness == RobustnessMode.stderr_proxy and matrix.stderr is None:
        key, _ = method_key(ctx, matrix.key, "robustness")
        csv = ctx.settings.matrix(matrix.key).reader == Reader.csv
        fix = (
            "give it a stderr_file, or robustness: none, in the user folder's matrices.yaml"
            if csv
            else f"set {PREFIX}.matrices.{matrix.key}.robustness=none"
        )
        raise SettingError(f"{key} = stderr_proxy: matrix {matrix.key!r} has no standard errors; {fix}")


def ensembles_for(ctx: Context, settings: Method) -> pd.DataFrame | None:
    """The ensemble score table when robustness.mode=ensembles (robustness.ensembles_file), else None."""
    if settings.robustness != RobustnessMode.ensembles:
        return None
    path = ctx.settings.robustness.ensembles_file
    if not path:  # a matrix's own robustness: ensembles, with no file (the schema checks robustness.mode's)
        raise ValueError("proxy_tasks.robustness.mode=ensembles needs proxy_tasks.robustness.ensembles_file")
    return read_ensembles(resolve(path), labels(ctx))


def paper_ensembles(ctx: Context, relpath: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The paper's Table 4 ensembles (YAML below conf/) as the long table, and the whole YAML document."""
    path = conf_dir() / relpath
    if not path.is_file():
        raise FileNotFoundError(f"{path} (proxy_tasks.table_5.ensembles) does not exist")
    spec = yaml.safe_load(path.read_text())
    for field in ("ensembles", "scores"):
        if field not in spec:
            raise ValueError(f"{path}: field {field!r} is missing")
    return ensembles_from_wide(spec, str(path)), spec


def settings_dict(settings: Method) -> dict[str, Any]:
    out = asdict(settings)
    out["max_proxies_effective"] = settings.proxies_cap
    return out
