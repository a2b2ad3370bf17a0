"""Why the settings' schemas are pydantic sections and not OmegaConf structured configs: what each does with the
project's own config, printed.

    python analysis/schema_measurement.py

1. Three bad values at once: how many does each report? (OmegaConf stops at the first.)
2. A union of a flag and a choice set, as pretrain-on-test's `noncentered_t: true | false | auto` is: does each
   take `auto`?
3. A frozen section (settings are read-only): can OmegaConf merge values into one?
4. How long the whole composed `testtask` config takes to type, every paper's section included.
"""

from __future__ import annotations

import dataclasses
import time

from omegaconf import OmegaConf

from testtask import schema
from testtask.pipeline import compose, config_schema


@dataclasses.dataclass
class Figure7:
    slices: int
    chains: int
    draws: int


@dataclasses.dataclass(frozen=True)
class Frozen:
    slices: int


@dataclasses.dataclass
class Holder:
    inner: dict[str, Frozen]


def _omegaconf_errors(values: dict) -> int:
    try:
        OmegaConf.merge(OmegaConf.structured(Figure7), values)
    except Exception as err:  # noqa: BLE001 - what it raises is the measurement
        return len([line for line in str(err).splitlines() if "could not be converted" in line])
    return 0


def main() -> None:
    bad = {"slices": "many", "chains": "four", "draws": "lots"}
    ours = schema.section(type("Figure7", (), {"__annotations__": {k: schema.PositiveInt for k in bad}}))
    _, lines = schema.violations(ours, bad, "figure_7")
    print(f"1. three bad values: OmegaConf reports {_omegaconf_errors(bad)}, the schema {len(lines)}")

    from testtask.pretrain_on_test.settings import Auto, TrueFalseAuto

    plain_union = dataclasses.make_dataclass("U", [("noncentered_t", bool | Auto)])
    try:
        OmegaConf.merge(OmegaConf.structured(plain_union), {"noncentered_t": "auto"})
        union = "takes it"
    except Exception as err:  # noqa: BLE001
        union = f"refuses it ({type(err).__name__}: {str(err).splitlines()[0]})"
    ours_union = schema.section(type("U", (), {"__annotations__": {"noncentered_t": TrueFalseAuto}}))
    typed = schema.load(ours_union, {"noncentered_t": "auto"})
    print(f"2. `bool | Auto` given 'auto': OmegaConf {union}; the schema takes it ({typed.noncentered_t!r})")

    try:
        OmegaConf.merge(OmegaConf.structured(Holder), {"inner": {"a": {"slices": 1}}})
        frozen = "merges it"
    except Exception as err:  # noqa: BLE001
        frozen = f"refuses it ({type(err).__name__})"
    print(
        f"3. a value into a frozen section held in a mapping: OmegaConf {frozen}; the schema builds it frozen"
    )

    cfg = compose([])
    start = time.perf_counter()
    whole = config_schema()  # imports every paper's plug-in
    imported = time.perf_counter() - start
    start = time.perf_counter()
    schema.load(whole, cfg, exclude=("hydra",))
    first = time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(10):
        schema.load(config_schema(), cfg, exclude=("hydra",))
    again = (time.perf_counter() - start) / 10
    leaves = len(schema.leaves(config_schema(), schema.plain(cfg, exclude=("hydra",))))
    print(
        f"4. the whole config ({leaves} leaves): {first * 1000:.0f} ms the first time (building the validator), "
        f"{again * 1000:.0f} ms after; importing the papers' plug-ins took {imported:.1f} s"
    )


if __name__ == "__main__":
    main()
