"""How long composing the `testtask` config takes: each compose after the first (the files then loaded), the mean
of `--repeat` composes, with the kept loads of `testtask.hydra_loads` and without them (Hydra alone).

    .venv/bin/python analysis/compose_time.py [--repeat N] [overrides ...]
"""

from __future__ import annotations

import argparse
import time


def mean_seconds(overrides: list[str], repeat: int) -> float:
    from testtask.pipeline import compose

    compose(overrides)  # the first compose loads the files
    start = time.perf_counter()
    for _ in range(repeat):
        compose(overrides)
    return (time.perf_counter() - start) / repeat


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("overrides", nargs="*")
    args = parser.parse_args()
    hydra_alone = mean_seconds(args.overrides, args.repeat)
    from testtask.hydra_loads import keep_loaded_configs

    keep_loaded_configs()
    kept = mean_seconds(args.overrides, args.repeat)
    print(f"per compose: {hydra_alone:.3f} s with Hydra alone, {kept:.3f} s with the kept loads")


if __name__ == "__main__":
    main()
