"""The chain log p_vocab → p_vocab → p_choices → Brier / accuracy against closed forms, and the samples reader."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import expit

from tests.conftest import REPO
from testtask.downstream_predictability.chain import chain, normalised_loglik
from testtask.downstream_predictability.inputs import SamplesError, read_samples
from testtask.downstream_predictability.simulate import sample_line, write_samples

MINI_SAMPLES = REPO / "results" / "training-on-the-test-task" / "cpu-mini" / "samples"


def test_two_choices_is_a_sigmoid_of_the_difference():
    rng = np.random.default_rng(1)
    ll = rng.normal(-5.0, 3.0, size=(50, 2))
    target = rng.integers(0, 2, 50)
    values = chain(ll, target)
    correct = ll[np.arange(50), target]
    other = ll[np.arange(50), 1 - target]
    p = expit(correct - other)
    np.testing.assert_allclose(values["log_p_vocab"], correct)
    np.testing.assert_allclose(values["p_vocab"], np.exp(correct))
    np.testing.assert_allclose(values["p_choices"], p, rtol=1e-12)
    np.testing.assert_allclose(
        values["brier"], 2.0 * (1.0 - p) ** 2, rtol=1e-9, atol=1e-15
    )  # (1-p)² + (p-1)²
    np.testing.assert_array_equal(values["accuracy"], (correct > other).astype(float))


def test_brier_and_masses_of_a_known_distribution():
    # Vocabulary masses 0.05, 0.03, 0.02: renormalised over the choices they are 0.5, 0.3, 0.2.
    ll = np.log([[0.05, 0.03, 0.02]])
    values = chain(ll, np.array([0]))
    assert values["p_vocab"][0] == pytest.approx(0.05)
    assert values["p_choices"][0] == pytest.approx(0.5)
    assert values["brier"][0] == pytest.approx(0.5**2 + 0.3**2 + 0.2**2)  # 0.38
    assert values["accuracy"][0] == 1.0
    assert values["log_p_vocab_incorrect_sum"][0] == pytest.approx(np.log(0.05))
    wrong = chain(ll, np.array([2]))
    assert wrong["brier"][0] == pytest.approx(0.5**2 + 0.3**2 + 0.8**2) and wrong["accuracy"][0] == 0.0


def test_multi_token_continuation_is_exp_of_the_sum():
    tokens = np.array([-1.2, -0.3, -0.5])  # three tokens of the correct continuation
    values = chain(np.array([[tokens.sum(), -4.0]]), np.array([0]))
    assert values["p_vocab"][0] == pytest.approx(np.prod(np.exp(tokens)))


def test_absent_choices_are_ignored_and_members_broadcast():
    padded = np.array([[-1.0, -2.0, np.nan, np.nan]])
    two = np.array([[-1.0, -2.0]])
    for key in ("p_choices", "brier", "accuracy"):
        assert chain(padded, np.array([1]))[key][0] == pytest.approx(chain(two, np.array([1]))[key][0])
    stacked = np.stack([two, two + np.array([[0.0, 3.0]])])  # (members, docs, choices), one target per doc
    values = chain(stacked, np.array([0]))
    assert values["accuracy"].tolist() == [[1.0], [0.0]]
    with pytest.raises(ValueError, match="target"):
        chain(padded, np.array([2]))


def test_reader_fields_normalisation_and_targets(tmp_path):
    path = tmp_path / "task.jsonl"
    rows = [sample_line(0, [-3.0, -4.0], 1, ["ab", "abcd"]), sample_line(1, [-2.0, -9.0], 0, ["ab", "abcd"])]
    rows[1]["target"] = "ab"  # a target given as the choice's text
    del rows[1]["filtered_resps"]  # only the nested `resps`
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    samples = read_samples(path)
    assert samples.target.tolist() == [1, 0]
    np.testing.assert_array_equal(samples.loglik, [[-3.0, -4.0], [-2.0, -9.0]])
    np.testing.assert_array_equal(samples.chars, [[2, 4], [2, 4]])  # " ab" without the target delimiter
    per_char = normalised_loglik(samples, "chars")
    np.testing.assert_allclose(per_char[0], [-1.5, -1.0])  # acc_norm picks choice 1, acc picks choice 0
    assert chain(per_char, samples.target)["accuracy"].tolist() == [1.0, 1.0]
    assert chain(samples.loglik, samples.target)["accuracy"].tolist() == [0.0, 1.0]
    assert samples.logged["acc"].tolist() == [0.0, 1.0]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r: r.pop("target"), "field `target` is missing"),
        (lambda r: r.update(target=7), "out of range"),
        (lambda r: r.update(filtered_resps=[["x", False], [-1.0, False]]), "not a number"),
        (lambda r: r.pop("doc_id"), "field `doc_id`"),
    ],
)
def test_reader_errors_name_the_file_and_the_field(tmp_path, change, message):
    row = sample_line(0, [-1.0, -2.0], 0, ["a", "b"])
    change(row)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(SamplesError, match=message) as err:
        read_samples(path)
    assert str(path) in str(err.value)


def test_written_samples_round_trip(tmp_path):
    ll = np.array([[-1.0, -0.5, -3.0], [-2.0, -2.5, -0.1]])
    samples = read_samples(write_samples(tmp_path / "t.jsonl", ll, np.array([1, 0]), ["x", "y", "z"]))
    np.testing.assert_array_equal(samples.loglik, ll)
    np.testing.assert_allclose(samples.logged["brier_score"], chain(ll, np.array([1, 0]))["brier"])


@pytest.mark.skipif(not MINI_SAMPLES.is_dir(), reason="the committed CPU mini-run samples are absent")
def test_chain_agrees_with_lm_eval_on_the_mini_run():
    """Our accuracy, acc_norm and Brier score equal the per-document values lm-eval logged."""
    checked = 0
    for path in sorted(MINI_SAMPLES.glob("base/*/*.jsonl")):
        samples = read_samples(path)
        plain = chain(samples.loglik, samples.target)
        np.testing.assert_array_equal(plain["accuracy"], samples.logged["acc"], err_msg=str(path))
        if "brier_score" in samples.logged:
            np.testing.assert_allclose(plain["brier"], samples.logged["brier_score"], atol=1e-9)
        if "acc_norm" in samples.logged:
            norm = chain(normalised_loglik(samples, "chars"), samples.target)
            np.testing.assert_array_equal(norm["accuracy"], samples.logged["acc_norm"], err_msg=str(path))
        checked += 1
    assert checked >= 10
