"""Figure 4's selection, as the authors' analysis/dataset_level.ipynb makes it: the observed average bias per
(m, n, LM type, task), the mean over subsamples of acc_test − acc_extra, against the threshold (`>` by default, the
notebook's filter; ≥ under protocol=paper_text, the text's "at least")."""

from __future__ import annotations

import pandas as pd
import pytest

from testtask.pipeline import configured
from testtask.pretrain_on_test import accuracies
from testtask.pretrain_on_test.boost_bias_figures import reached_threshold

from .test_descriptive import mirror_root

# kddubey/pretrain-on-test@80fd183:analysis/dataset_level.ipynb:231 (its output) and the six panels of the released
# analysis/results/figures/lemons_m50_bert_03.png
AUTHORS_TASKS = [
    "amazon_counterfactual_en",
    "craigslist_bargains",
    "emo",
    "financial_phrasebank",
    "mtop_domain",
    "trec",
]


def _frame(rows: list[tuple[str, str, list[int]]], n: int = 100) -> pd.DataFrame:
    """Subsample rows of (LM type, task, bias counts test − extra), with extra at 50 correct."""
    out = []
    for lm_type, dataset, differences in rows:
        for k, d in enumerate(differences):
            out.append(
                {"m": 50, "n": n, "lm_type": lm_type, "dataset": dataset, "subsample": k}
                | {"extra_correct": 50, "test_correct": 50 + d, "base_correct": 40}
            )
    return pd.DataFrame(out)


def test_a_mean_exactly_at_the_threshold_passes_only_the_inclusive_comparison():
    data = _frame(
        [
            ("bert", "at", [2, 4]),  # mean 3 / 100 = 0.03 exactly
            ("bert", "above", [3, 4]),
            ("gpt2", "below", [2, 3]),
            ("gpt2", "at", [1, 5]),
        ]
    )
    strict = reached_threshold(data, 0.03, strict=True)
    inclusive = reached_threshold(data, 0.03, strict=False)
    assert strict[["lm_type", "dataset"]].values.tolist() == [["bert", "above"]]
    assert inclusive[["lm_type", "dataset"]].values.tolist() == [
        ["bert", "above"],
        ["bert", "at"],
        ["gpt2", "at"],
    ]
    assert strict["bias"].tolist() == pytest.approx([0.035])


def test_the_default_is_the_notebooks_strict_filter_and_the_preset_the_texts():
    assert configured("pretrain-on-test").figure_4.strict is True
    assert configured("pretrain-on-test", ("protocol=paper_text",)).figure_4.strict is False


@pytest.mark.skipif(mirror_root() is None, reason="no data mirror on this machine")
def test_the_release_gives_the_authors_tasks_all_from_bert():
    data = accuracies.load(mirror_root() / "accuracies_from_paper")
    reached = reached_threshold(data, 0.03, strict=True)
    assert set(reached["lm_type"]) == {"bert"}
    tasks = sorted(reached["dataset"].unique())
    if set(data["m"]) == {50, 100}:
        assert tasks == AUTHORS_TASKS
    else:  # the offline mirror's m = 50 only
        assert tasks == ["amazon_counterfactual_en", "emo", "financial_phrasebank", "mtop_domain"]
    # No GPT-2 task reaches even 2% (dataset_level.ipynb:203's table lists BERT rows only).
    assert reached_threshold(data[data.lm_type == "gpt2"], 0.02, strict=True).empty
