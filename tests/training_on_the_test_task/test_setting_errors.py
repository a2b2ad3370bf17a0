"""A setting valid on its own that the source cannot serve stops the build with one line naming the key, its
value and what to change (`testtask.errors.SettingUnusable`), before a fit fails on it with a traceback; a source
that lacks a benchmark skips the output with a reason that names the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import stamp_release
from tests.training_on_the_test_task.test_figures import PAPER, make_tree
from testtask.errors import InputError, SettingUnusable
from testtask.pipeline import NothingBuilt, build, compose

KEY = "training_on_the_test_task"


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory) -> Path:
    """The synthetic release of test_figures: base, e1, e2, e3 and checkpoints 10, 250 and 1000."""
    data = tmp_path_factory.mktemp("tott-settings") / "published"
    make_tree(data / PAPER)
    stamp_release(data / PAPER)
    return data


CASES = [
    (
        ("figure", 1),
        [f'{KEY}.cutoff="2030-01"'],
        f"{KEY}.cutoff = '2030-01': 2030-01 puts every model of this source in the older cohort (train dates ",
        "choose a month after ",
    ),
    (
        ("figure", 11),
        [f'{KEY}.robustness_cutoffs=["2010-01","2024-01"]'],
        f"{KEY}.robustness_cutoffs = ['2010-01', '2024-01']: 2010-01 puts every model of this source in the "
        "newer cohort",
        "choose a month after ",
    ),
    (
        ("figure", 1),
        [f"{KEY}.model_kinds=[instruct]"],
        f"{KEY}.model_kinds = ['instruct']: no model of these registry sections has a result in ",
        "choose among the sections it has results of: base",
    ),
    (
        ("figure", 1),
        [f"{KEY}.adjustment.stage=e9"],
        f"{KEY}.adjustment.stage = 'e9': ",
        "holds no result of this stage (its stages: base, e1, e2, e3, intermediate)",
    ),
    (
        ("figure", 14),
        [f"{KEY}.figure_14.step=99"],
        f"{KEY}.figure_14.step = 99: the source has no checkpoint step_99 of mmlu fine-tuned on mmluaux",
        "choose one of its steps: 10, 250, 1000",
    ),
    (
        ("table", 5),
        [f"{KEY}.table_5.step=99"],
        f"{KEY}.table_5.step = 99: ",
        "choose one of its steps: 10, 250, 1000",
    ),
    (
        ("figure", 8),
        [f"{KEY}.figure_8.steps=[99]"],
        f"{KEY}.figure_8.steps = [99]: no checkpoint of these has results of 4 older models to fit",
        "choose among the steps that have: 0, 10, 250, 1000",
    ),
    (
        ("figure", 8),
        [f"{KEY}.emergence.max_compute=1"],
        f"{KEY}.emergence.max_compute = 1.0: 0 older model(s) of this source have compute in ",
        "widen the window of emergence.min_compute and emergence.max_compute",
    ),
    (
        ("figure", 3),
        [f"{KEY}.figure_3.min_compute=1e30"],
        f"{KEY}.figure_3.min_compute = 1e+30: the treatment arm is empty",
        "choose a compute that leaves at least two older models at or above it",
    ),
    (
        ("figure", 6),
        [f"{KEY}.figure_6.families.Pythia=nope"],
        f"{KEY}.figure_6.families.Pythia = 'nope': no model of this source is named 'nope-<size>'",
        "give the family's model-name prefix",
    ),
]


@pytest.mark.parametrize(("output", "overrides", "start", "change"), CASES)
def test_a_setting_the_source_cannot_serve_is_one_line_naming_the_key(
    synthetic, tmp_path, output, overrides, start, change
):
    kind, number = output
    cfg = compose([f"paper={PAPER}", f"data.dest={synthetic}", f"figures_dir={tmp_path}", *overrides])
    with pytest.raises(SettingUnusable) as caught:
        build(cfg, kind, [number])
    text = str(caught.value)
    assert isinstance(caught.value, InputError) and "\n" not in text
    assert text.startswith(start), text
    assert change in text, text
    assert not any(tmp_path.rglob("*.json"))  # stopped before anything was written


def test_a_benchmark_the_source_lacks_skips_the_output_naming_the_key(synthetic, tmp_path):
    cfg = compose(
        [
            f"paper={PAPER}",
            f"data.dest={synthetic}",
            f"figures_dir={tmp_path}",
            f"{KEY}.benchmarks.mmlu.file=nope",
        ]
    )
    with pytest.raises(
        NothingBuilt, match=rf"no results of benchmark mmlu \({KEY}\.benchmarks\.mmlu\.file = 'nope'\)"
    ):
        build(cfg, "figure", [1])
