"""`analysis/downstream_predictability_summary.py` reads the sidecars where a build put them: the preset's folder,
or the one variant a build with overrides made (the docs' `undefined=zero` example), and names the variants when
there are several."""

from __future__ import annotations

import pytest

from tests.conftest import analysis_script
from testtask.paths import output_dir

SUBDIR = "downstream-predictability"


def test_the_summary_finds_the_one_variant_built_and_names_several(tmp_path):
    summary = analysis_script("downstream_predictability_summary")
    figures = tmp_path / "figures"
    first = output_dir(
        figures, "results", "cpu-mini", SUBDIR, variant="downstream_predictability.undefined=zero"
    )
    first.mkdir(parents=True)
    assert summary.sidecar_folder(figures, "cpu-mini", None) == first
    preset = output_dir(figures, "results", "cpu-mini", SUBDIR)
    other = output_dir(
        figures, "results", "cpu-mini", SUBDIR, variant="downstream_predictability.undefined=drop"
    )
    other.mkdir(parents=True)
    with pytest.raises(
        SystemExit, match="undefined=drop, downstream_predictability.undefined=zero: pick one"
    ):
        summary.sidecar_folder(figures, "cpu-mini", None)
    assert summary.sidecar_folder(figures, "cpu-mini", "downstream_predictability.undefined=zero") == first
    preset.mkdir(parents=True)  # the preset's own build is read first
    assert summary.sidecar_folder(figures, "cpu-mini", None) == preset
