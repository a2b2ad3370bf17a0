"""Own benchmark categories (conf/user/benchmarks.yaml, see testtask.user_files) merged into
`train_before_test.categories`, so a benchmark of one's own results is analysed instead of skipped.

    mode: add                  # add (default): these categories join the configured ones; replace: only these
    categories:
      Code: {name: Code, benchmarks: [humaneval, mbpp]}
    labels: {humaneval: HumanEval}   # optional: names in figures and tables

A Hydra override cannot do this: `train_before_test.categories={...}` merges into the configured mapping.
"""

from __future__ import annotations

from typing import Any

MODES = ("add", "replace")


def categories(file: Any) -> tuple[str, dict[str, dict[str, Any]], dict[str, str]]:
    """(mode, category key -> {name, benchmarks}, labels) of `file`, checked; errors name the file and field."""
    data = file.check_fields("benchmarks.yaml", file.data, ("categories",), ("mode", "labels"))
    mode = data.get("mode", "add")
    if mode not in MODES:
        raise file.error("mode", f"expected one of {', '.join(MODES)}, got {mode!r}")
    raw = data["categories"]
    if not isinstance(raw, dict) or not raw:
        raise file.error("categories", f"expected a non-empty mapping of category -> fields, got {raw!r}")
    out: dict[str, dict[str, Any]] = {}
    seen: dict[str, str] = {}
    for key, spec in raw.items():
        where = f"categories.{key}"
        spec = file.check_fields(where, spec, ("benchmarks",), ("name",))
        benches = spec["benchmarks"]
        if not isinstance(benches, list) or not benches or not all(isinstance(b, str) and b for b in benches):
            raise file.error(
                f"{where}.benchmarks", f"expected a non-empty list of benchmark names, got {benches!r}"
            )
        for bench in benches:
            if bench in seen:
                raise file.error(f"{where}.benchmarks", f"{bench!r} is also in category {seen[bench]!r}")
            seen[bench] = str(key)
        name = spec.get("name", str(key))
        if not isinstance(name, str) or not name:
            raise file.error(f"{where}.name", f"expected a non-empty string, got {name!r}")
        out[str(key)] = {"name": name, "benchmarks": list(benches)}
    labels = data.get("labels") or {}
    if not isinstance(labels, dict) or not all(isinstance(v, str) for v in labels.values()):
        raise file.error("labels", f"expected a mapping of benchmark -> label, got {labels!r}")
    return str(mode), out, {str(k): v for k, v in labels.items()}


def merge(cfg: Any, file: Any) -> None:
    """The `testtask` config: own categories join (`add`) or replace (`replace`) `train_before_test.categories`.
    In `add` mode a benchmark the configured categories already list is an error (it would count twice)."""
    mode, own, labels = categories(file)
    section = cfg.train_before_test
    if mode == "replace":
        section.categories = own
    else:
        for key, spec in own.items():
            for other, configured in section.categories.items():
                if other == key:
                    continue  # replaced whole below (and so applying the file twice changes nothing)
                taken = sorted(set(spec["benchmarks"]) & set(configured["benchmarks"]))
                if taken:
                    raise file.error(
                        f"categories.{key}.benchmarks",
                        f"{taken} already in the configured category {other!r}; use mode: replace to regroup",
                    )
            section.categories[key] = spec
    for bench, label in labels.items():
        section.labels[bench] = label
