"""How long composing the `testtask` config takes: each compose after the first (the files then loaded), the mean
of `--repeat` composes, with the kept loads of `testtask.hydra_loads` and without them (Hydra alone); and how long
parsing every YAML file under conf/ takes with PyYAML's Python parser and with LibYAML's (the kept loads' parser).

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


def parse_seconds() -> tuple[int, float, float]:
    """How many files conf/ holds, and the seconds to parse them all with OmegaConf's loader and with the kept
    loads' LibYAML one (installed by then)."""
    import yaml
    from omegaconf import _utils

    from testtask.paths import conf_dir

    texts = [path.read_text() for path in sorted(conf_dir().rglob("*.yaml"))]
    loader = _utils.get_yaml_loader
    seconds = []
    for make in (getattr(loader, "original", loader), loader):
        start = time.perf_counter()
        for text in texts:
            yaml.load(text, Loader=make())
        seconds.append(time.perf_counter() - start)
    return len(texts), seconds[0], seconds[1]


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
    files, python, libyaml = parse_seconds()
    print(
        f"parsing the {files} YAML files under conf/: {python:.3f} s with PyYAML's parser, {libyaml:.3f} s with LibYAML's"
    )


if __name__ == "__main__":
    main()
