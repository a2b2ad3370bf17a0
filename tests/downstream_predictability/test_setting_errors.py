"""A family or a task the settings ask for by name that has no samples stops the build with one line naming the
key and what to change (`testtask.errors.SettingUnusable`); a family merely configured, without samples, is
skipped as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from testtask.downstream_predictability.simulate import family_overrides, simulate_family
from testtask.errors import InputError, SettingUnusable
from testtask.pipeline import build, compose

PAPER = "downstream-predictability"
KEY = "downstream_predictability"


def _config(tmp_path: Path, *extra: str):
    """A simulated family (tasks sim_a, sim_b) in a results run, analysed alone (`families_used`), plus `extra`."""
    family = simulate_family(
        tmp_path / "results" / PAPER / "run", PAPER, n_members=3, n_docs=20, tasks=("sim_a", "sim_b"), seed=1
    )
    return compose(
        [
            f"paper={PAPER}",
            "source=results",
            f"results_dir={tmp_path / 'results'}",
            "results_run=run",
            f"figures_dir={tmp_path / 'figures'}",
            *family_overrides(family),
            *extra,
        ]
    )


@pytest.mark.parametrize(
    ("override", "start", "change"),
    [
        (
            f"{KEY}.families.simulated.model=nope",
            f"{KEY}.families_used = ['simulated']: family simulated has no samples to analyse for source=results "
            "(no task is logged by every member)",
            f"; fix {KEY}.families.simulated (paper, samples_dir, model) or leave simulated out of families_used",
        ),
        (
            f"{KEY}.families.simulated.samples_dir=nope",
            f"{KEY}.families_used = ['simulated']: family simulated has no samples to analyse",
            "does not exist); fix ",
        ),
        (
            f"{KEY}.tasks=[sim_a,nope]",
            f"{KEY}.tasks = ['sim_a', 'nope']: nope: logged by every member of no family",
            "; name tasks the families logged (sim_a, sim_b), or [] for every task",
        ),
    ],
)
def test_a_family_or_task_without_samples_is_one_line_naming_the_key(tmp_path, override, start, change):
    with pytest.raises(SettingUnusable) as caught:
        build(_config(tmp_path, override), "figure", [2])
    text = str(caught.value)
    assert isinstance(caught.value, InputError) and "\n" not in text
    assert text.startswith(start), text
    assert change in text, text


def test_a_configured_family_without_samples_is_skipped_when_not_asked_for(tmp_path):
    """Without `families_used`, every configured family whose samples exist is analysed: the shipped CPU-mini
    family has none in this run and is skipped, the simulated one is drawn."""
    built = build(_config(tmp_path, f"{KEY}.families_used=null"), "figure", [2])
    assert [b["figure"] for b in built] == [2]
