"""A setting the results file cannot serve is one line naming the config key: a regime field the file lacks stops
the build (naming the file, the field and the key), and a selection that leaves an output without inputs (perplexity
corpora, the case study's prefix, the instruction-tuned suffixes, the results file) skips it with a reason that
names the key."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

from tests.train_before_test.conftest import SMALL_BENCHMARKS, small_config, synthetic_results, write_release
from testtask.errors import InputError
from testtask.pipeline import NothingBuilt, run

KEY = "train_before_test"


@pytest.fixture
def synthetic(tmp_path: Path) -> Path:
    return write_release(tmp_path, synthetic_results(SMALL_BENCHMARKS))


def _build(root: Path, figure: int, *overrides: str) -> None:
    run(OmegaConf.merge(small_config(root, *overrides), {"action": "figure", "figure": figure}))


@pytest.mark.parametrize(
    ("override", "field"),
    [
        (f"{KEY}.regimes.direct.field=direct", "regimes.direct.field"),
        (
            f"{KEY}.regimes.train_before_test.stderr_field=tbt_stderr",
            "regimes.train_before_test.stderr_field",
        ),
    ],
)
def test_a_regime_field_the_file_lacks_is_one_line_naming_file_field_and_key(synthetic, override, field):
    with pytest.raises(InputError) as caught:
        _build(synthetic, 2, override)
    text = str(caught.value)
    missing = override.split("=")[1]
    assert "\n" not in text
    assert text.startswith(f"{synthetic / 'published' / 'train-before-test' / 'all_results.json'}: ")
    assert f"field '{missing}' is missing (top-level fields: ['direct_eval', " in text
    assert f"; {KEY}.{field} names it: set it to one of those fields, or add the field to the file" in text


@pytest.mark.parametrize(
    ("figure", "override", "named"),
    [
        (
            4,
            f"{KEY}.perplexity.corpora=[nope]",
            f"none of the perplexity corpora of {KEY}.perplexity.corpora (nope)",
        ),
        (
            8,
            f"{KEY}.pca.case_study.model_prefix=nope/",
            f"starting 'nope/' ({KEY}.pca.case_study.model_prefix)",
        ),
        (5, f"{KEY}.instruction_tuned_suffixes=[-nope]", f"one of {KEY}.instruction_tuned_suffixes, -nope"),
        (2, f"{KEY}.results_file=nope.json", f"the file is {KEY}.results_file = 'nope.json'"),
    ],
)
def test_a_selection_the_file_cannot_serve_skips_naming_the_key(synthetic, figure, override, named):
    with pytest.raises(NothingBuilt) as caught:
        _build(synthetic, figure, override)
    assert "\n" not in str(caught.value) and named in str(caught.value)
