"""§9.2: Oren et al.'s sharded likelihood comparison test (`pretrain_on_test.contamination`), the causal-LM
sequence scorer (`runner.likelihood`), the runner's `task=contamination` end to end on a tiny Llama, and the
`table-contamination` builder.

Known answers: the authors' logged shard statistics give their p-values (0.336, 0.0156); on bigram models that
cannot know the canonical order (fixed, or fitted to a shuffled order) the rejection rate at α = 0.05 stays in its
binomial interval; a bigram model fitted to the canonical order is flagged; and (slow, `make test-slow`) a tiny
transformer trained on the canonical order is flagged, one trained on a shuffled order is not.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from testtask.pretrain_on_test.contamination import (
    ContaminationTestError,
    ShardedTest,
    combine,
    run_test,
    shard_sizes,
    sharded_statistics,
)

FIXTURE = Path(__file__).parents[1] / "fixtures" / "contamination_authors_logs.json"
VOCAB = 40


# ---------------------------------------------------------------------------------------------------------------
# the statistic


def test_shard_sizes_follow_the_authors_split():
    sizes = shard_sizes(500, 256)  # the paper's run: 244 shards of 2, then 12 of 1
    assert sizes.sum() == 500
    assert list(sizes[:244]) == [2] * 244 and list(sizes[244:]) == [1] * 12
    assert list(shard_sizes(9, 3)) == [3, 3, 3]
    with pytest.raises(ContaminationTestError, match="num_shards = 5 exceeds the 4 examples"):
        shard_sizes(4, 5)


@pytest.mark.parametrize(("arm", "paper"), [("extra", 0.33), ("test", 0.015)])
def test_authors_logged_statistics_give_their_p_values(arm, paper):
    logged = json.loads(FIXTURE.read_text())["arms"][arm]
    d = np.asarray(logged["canonical"]) - np.asarray(logged["permuted_mean"])
    result = combine(d, ddof=0)
    assert result.shards == 256
    assert result.p_value == pytest.approx(logged["pval"], rel=1e-9)
    step = 10 ** (math.floor(math.log10(paper)) - 1)  # the paper cuts to two significant digits
    assert paper <= result.p_value < paper + step


def test_combine_is_a_one_sided_t_test():
    d = np.array([0.5, 1.5, -0.25, 2.0, 0.75])
    t = d.mean() / d.std() * math.sqrt(len(d))
    assert combine(d).t == pytest.approx(t)
    assert combine(d).p_value == pytest.approx(1 - stats.t.cdf(t, df=4))
    sample = stats.ttest_1samp(d, 0.0, alternative="greater")
    assert combine(d, ddof=1).p_value == pytest.approx(sample.pvalue)
    assert combine(-d).p_value == pytest.approx(1 - combine(d).p_value)
    flat = combine(np.zeros(4))
    assert flat.degenerate and math.isnan(flat.p_value)
    with pytest.raises(ContaminationTestError, match="at least 2"):
        combine(np.ones(1))


def test_settings_are_checked():
    with pytest.raises(ContaminationTestError, match="num_shards = 1"):
        ShardedTest(1, 5)
    with pytest.raises(ContaminationTestError, match="permutations = 0"):
        ShardedTest(4, 0)
    with pytest.raises(ContaminationTestError, match="ddof = 2"):
        ShardedTest(4, 5, ddof=2)


def random_examples(rng, count):
    return [list(rng.integers(0, VOCAB, size=rng.integers(3, 7))) for _ in range(count)]


def bigram_scorer(table):
    """log p(x) = Σ_t log table[x_{t−1}, x_t] (the first token conditioned on, as in the LM scorer)."""

    def score(sequences):
        return [float(table[s[:-1], s[1:]].sum()) for s in map(np.asarray, sequences)]

    return score


def fitted_bigram(tokens, smoothing=0.1):
    counts = np.full((VOCAB, VOCAB), smoothing)
    np.add.at(counts, (tokens[:-1], tokens[1:]), 1.0)
    return np.log(counts / counts.sum(axis=1, keepdims=True))


def test_identical_orders_are_scored_once_and_statistics_match_brute_force():
    rng = np.random.default_rng(0)
    examples = random_examples(rng, 12)
    table = np.log(rng.dirichlet(np.ones(VOCAB), size=VOCAB))
    seen = []

    def score(sequences):
        seen.extend(map(tuple, sequences))
        return bigram_scorer(table)(sequences)

    test = ShardedTest(num_shards=5, permutations=30)
    statistics = sharded_statistics(examples, score, test, np.random.default_rng(1))
    assert len(seen) == len(set(seen)) == statistics.sequences_scored
    assert statistics.sequences_scored <= 2 * 2 + 3 * 6  # shards of 3, 3, 2, 2, 2: at most s! orders each

    again = np.random.default_rng(1)  # the same draws, scored one by one
    starts = np.concatenate([[0], np.cumsum(statistics.sizes)[:-1]])
    one = bigram_scorer(table)
    for i, (start, size) in enumerate(zip(starts, statistics.sizes, strict=True)):
        shard = examples[start : start + size]
        assert statistics.canonical[i] == pytest.approx(one([sum(shard, [])])[0])
    orders = [np.array([again.permutation(int(s)) for _ in range(30)]) for s in statistics.sizes]
    for i, (start, shard_orders) in enumerate(zip(starts, orders, strict=True)):
        for j, order in enumerate(shard_orders):
            flat = sum((examples[start + k] for k in order), [])
            assert statistics.permuted[i, j] == pytest.approx(one([flat])[0])


def test_bad_scores_are_an_error():
    rng = np.random.default_rng(0)
    with pytest.raises(ContaminationTestError, match="expected one finite log-likelihood"):
        run_test(random_examples(rng, 6), lambda seqs: [0.0] * (len(seqs) - 1), ShardedTest(3, 2), seed=0)
    with pytest.raises(ContaminationTestError, match="finite: False"):
        run_test(random_examples(rng, 6), lambda seqs: [math.nan] * len(seqs), ShardedTest(3, 2), seed=0)


def rejection_rate(model, replications=300, alpha=0.05):
    """Share of replications (fresh exchangeable data each) whose p-value is below alpha; and the p-values."""
    p = []
    for seed in range(replications):
        rng = np.random.default_rng(seed)
        examples = random_examples(rng, 60)
        table = model(rng, examples)
        p.append(run_test(examples, bigram_scorer(table), ShardedTest(20, 10), seed=seed)[0].p_value)
    p = np.asarray(p)
    return float(np.mean(p < alpha)), p


def null_interval(replications=300, alpha=0.05):
    low, high = stats.binom.interval(0.999, replications, alpha)
    return low / replications, high / replications


@pytest.mark.parametrize("model", ["fixed", "fitted_to_shuffled"])
def test_type_one_error_when_the_model_cannot_know_the_order(model):
    def fixed(rng, examples):
        return np.log(np.random.default_rng(123).dirichlet(np.ones(VOCAB), size=VOCAB))

    def fitted_to_shuffled(rng, examples):  # a "model trained on" the examples in another order
        order = rng.permutation(len(examples))
        return fitted_bigram(np.concatenate([examples[i] for i in order]))

    rate, p = rejection_rate(fixed if model == "fixed" else fitted_to_shuffled)
    low, high = null_interval()
    assert low <= rate <= high, (rate, low, high)
    assert stats.kstest(p, "uniform").pvalue > 0.001  # roughly uniform, not just the tail


def test_a_model_trained_on_the_canonical_order_is_flagged():
    rate, p = rejection_rate(lambda rng, examples: fitted_bigram(np.concatenate(examples)), replications=50)
    assert rate >= 0.9 and np.median(p) < 1e-3


# ---------------------------------------------------------------------------------------------------------------
# the causal-LM scorer


class BigramLM:
    """A torch 'causal LM' whose next-token logits depend on the current token only (any window gives the same
    log-probabilities, so sliding windows must reproduce the full sum exactly)."""

    def __init__(self, table):
        import torch

        self.table = torch.as_tensor(table, dtype=torch.float32)

    def eval(self):
        return self

    def __call__(self, input_ids, attention_mask):
        from types import SimpleNamespace

        return SimpleNamespace(logits=self.table[input_ids])


@pytest.mark.parametrize(("context_len", "stride"), [(4, 2), (4, 4), (3, 1), (64, 32)])
def test_sliding_window_scores_every_token_once(context_len, stride):
    import torch

    from testtask.pretrain_on_test.runner.likelihood import sequence_logliks

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(VOCAB, VOCAB))
    logp = torch.log_softmax(torch.as_tensor(logits, dtype=torch.float32), dim=-1).double().numpy()
    sequences = [list(rng.integers(0, VOCAB, size=k)) for k in (2, 3, 5, 9, 15, 4)]
    got = sequence_logliks(
        BigramLM(logits),
        sequences,
        pad_id=0,
        device="cpu",
        batch_size=3,
        context_len=context_len,
        stride=stride,
    )
    want = [logp[np.asarray(s[:-1]), np.asarray(s[1:])].sum() for s in sequences]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    with pytest.raises(ValueError, match="stride = 5"):
        sequence_logliks(
            BigramLM(logits), sequences, pad_id=0, device="cpu", batch_size=3, context_len=4, stride=5
        )


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory) -> Path:
    import torch

    from tests.fixtures.tiny_models import build_model, fixture_frame

    torch.set_num_threads(1)
    return build_model("llama", tmp_path_factory.mktemp("contam_models") / "llama", fixture_frame()["text"])


def test_padded_batches_score_like_single_sequences(tiny_llama):
    from transformers import AutoModelForCausalLM

    from testtask.pretrain_on_test.runner.likelihood import sequence_logliks

    model = AutoModelForCausalLM.from_pretrained(tiny_llama)
    rng = np.random.default_rng(0)
    sequences = [list(rng.integers(3, 30, size=k)) for k in (5, 17, 9, 2, 12)]
    kw = {"pad_id": 0, "device": "cpu", "context_len": 64, "stride": 32}
    batched = sequence_logliks(model, sequences, batch_size=4, **kw)
    single = sequence_logliks(model, sequences, batch_size=1, **kw)
    np.testing.assert_allclose(batched, single, rtol=1e-5)


# ---------------------------------------------------------------------------------------------------------------
# the runner's task=contamination, end to end on a tiny Llama


def typed(cfg):
    """(the runner's typed settings, the composed config): what run_contamination takes."""
    from testtask.runners import settings_of

    return settings_of("pretrain-on-test", cfg), cfg


def contamination_config(model: Path, assets: Path, results: Path, *extra: str):
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from tests.fixtures.tiny_models import fixture_spec
    from testtask.paths import conf_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose(
            "pretrain_on_test_run",
            overrides=[
                "experiment=pretrain_on_test/contamination_cpu",
                f"lm.model={model}",
                "lm.pack_size=3",
                "lm.eval_batch_size=7",
                "dataset=fixture",
                "m=9",
                "n=12",
                "threads=null",
                "contamination.num_shards=6",
                "contamination.permutations=4",
                f"results_dir={results}",
                f"assets_dir={assets}",
                *extra,
            ],
        )
    OmegaConf.set_struct(cfg, False)
    cfg.datasets.fixture = fixture_spec()
    return cfg


@pytest.fixture(scope="module")
def assets(tmp_path_factory) -> Path:
    from tests.fixtures.tiny_models import fixture_frame

    folder = tmp_path_factory.mktemp("contam_assets")
    fixture_frame().to_csv(folder / "fixture.csv", index=False)
    return folder


@pytest.fixture(scope="module")
def finished(tiny_llama, assets, tmp_path_factory) -> Path:
    from testtask.pretrain_on_test.runner.contamination import run_contamination

    results = tmp_path_factory.mktemp("contam_results")
    return run_contamination(*typed(contamination_config(tiny_llama, assets, results)))


def test_runner_writes_the_cell_and_the_test_per_arm(finished):
    import pandas as pd

    from tests.fixtures.tiny_models import CLASSES, fixture_frame

    assert finished.name == "contamination.json"
    assert finished.parent.parts[-4:] == ("m9", "n12", "smollm2-qlora-zero-shot-packing", "fixture")
    result = json.loads(finished.read_text())
    assert result["complete"] and result["n"] == 12
    row = pd.read_csv(finished.parent / "accuracies.csv")
    assert list(row.columns) == ["base", "extra", "test", "majority", "num_classes", "majority_all"]
    assert len(row) == 1
    for name in ("base", "extra", "test"):
        assert row.at[0, name] == pytest.approx(result["accuracies"][name])
    assert result["bias"] == pytest.approx(row.at[0, "test"] - row.at[0, "extra"])
    for arm in ("extra", "test"):
        got = result["arms"][arm]
        assert 0.0 <= got["p_value"] <= 1.0 and got["shards"] == 6
        assert got["shard_sizes"] == [2] * 6 and len(got["permuted"]) == 6 and len(got["permuted"][0]) == 4
        assert got["sequences_scored"] <= 12  # two orders per shard of two
        d = np.asarray(got["canonical"]) - np.asarray(got["permuted_mean"])
        assert combine(d).p_value == pytest.approx(got["p_value"])
        assert got["pretrain"]["pretrain_tokens"] > 0
    # the pairs the test sees: test's texts in their draw order (the pretraining order), with their class names
    frame = fixture_frame()
    first = frame.iloc[result["subsample"]["test"][0]]
    assert (
        result["examples"]["first"][0] == f"### Text: {first['text']}\n ### Answer: {CLASSES[first['label']]}"
    )
    assert result["test"] == {
        "name": "sharded likelihood comparison test (Oren et al. 2024)",
        "num_shards": 6,
        "permutations": 4,
        "ddof": 0,
    }


def test_rerun_skips_finished_arms(finished, tiny_llama, assets, monkeypatch):
    from testtask.pretrain_on_test.runner import zeroshot
    from testtask.pretrain_on_test.runner.contamination import run_contamination

    results = finished.parents[4]
    before = finished.read_text()

    def refuse(*args, **kwargs):
        raise AssertionError("a finished arm was pretrained again")

    monkeypatch.setattr(zeroshot.ZeroShot, "pretrain", refuse)
    assert run_contamination(*typed(contamination_config(tiny_llama, assets, results))) == finished
    assert finished.read_text() == before


def test_interrupted_run_resumes_at_the_missing_arm(finished, tiny_llama, assets, tmp_path, monkeypatch):
    import shutil

    from testtask.pretrain_on_test.runner import zeroshot
    from testtask.pretrain_on_test.runner.contamination import run_contamination

    results = tmp_path / "results"
    cell = results / finished.parent.relative_to(finished.parents[4])
    cell.parent.mkdir(parents=True)
    shutil.copytree(finished.parent, cell)
    partial = json.loads(finished.read_text())
    del partial["arms"]["test"], partial["complete"]
    (cell / "contamination.json").write_text(json.dumps(partial))
    (cell / "accuracies.csv").unlink()
    (cell / "run_log.jsonl").unlink()
    calls = []
    original = zeroshot.ZeroShot.pretrain

    def counting(self, texts, seed):
        calls.append(texts)
        return original(self, texts, seed)

    monkeypatch.setattr(zeroshot.ZeroShot, "pretrain", counting)
    path = run_contamination(*typed(contamination_config(tiny_llama, assets, results)))
    result = json.loads(path.read_text())
    assert len(calls) == 1 and result["complete"]
    assert result["arms"]["extra"] == json.loads(finished.read_text())["arms"]["extra"]
    assert (cell / "accuracies.csv").exists()


def test_rerun_with_other_settings_is_refused(finished, tiny_llama, assets):
    from testtask.pretrain_on_test.runner.cell import ResumeError
    from testtask.pretrain_on_test.runner.contamination import run_contamination

    cfg = contamination_config(tiny_llama, assets, finished.parents[4], "contamination.permutations=5")
    with pytest.raises(ResumeError, match=r"different \['contamination'\]"):
        run_contamination(*typed(cfg))
    # ...but not a batch size, which changes speed only: the finished cell is read back, nothing reruns.
    before = finished.read_text()
    faster = contamination_config(tiny_llama, assets, finished.parents[4], "contamination.batch_size=3")
    assert run_contamination(*typed(faster)) == finished
    assert json.loads(finished.read_text())["arms"] == json.loads(before)["arms"]


def test_a_few_shot_lm_is_refused_by_name(tmp_path):
    from hydra import compose, initialize_config_dir

    from testtask.paths import conf_dir
    from testtask.schema import ConfigError

    overrides = ["experiment=pretrain_on_test/contamination_cpu", "lm=bert", f"results_dir={tmp_path}"]
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose("pretrain_on_test_run", overrides=overrides)
    with pytest.raises(
        ConfigError, match=r"lm.protocol = 'few_shot': expected zero_shot \(task=contamination"
    ):
        typed(cfg)
    assert not any(tmp_path.rglob("contamination.json"))


def test_presets_compose_and_pass_their_schema():
    from hydra import compose, initialize_config_dir

    from testtask.paths import conf_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        gpu = compose("pretrain_on_test_run", overrides=["experiment=pretrain_on_test/contamination"])
        cpu = compose("pretrain_on_test_run", overrides=["experiment=pretrain_on_test/contamination_cpu"])
    for cfg in (gpu, cpu):
        settings, _ = typed(cfg)
        assert settings.task == "contamination" and settings.lm.packing
    assert (gpu.dataset, gpu.n, gpu.lm.model, gpu.lm.quantization) == (
        "ag_news",
        500,
        "mistralai/Mistral-7B-v0.3",
        "nf4",
    )
    assert (gpu.contamination.num_shards, gpu.contamination.permutations) == (256, 50)
    assert cpu.lm.lm_type == "smollm2-qlora-zero-shot-packing" and cpu.n == 2 * cpu.contamination.num_shards
    assert (cpu.lm.quantization, cpu.lm.pretrain.optim) == ("nf4", "paged_adamw_8bit")  # the authors' recipe


# ---------------------------------------------------------------------------------------------------------------
# table-contamination


def test_table_reads_our_runs_beside_the_papers_numbers(finished, tmp_path):
    import shutil

    from testtask.context import Context
    from testtask.pipeline import configured
    from testtask.pretrain_on_test.contamination_table import table_contamination

    root = tmp_path / "run"
    shutil.copytree(finished.parents[4], root / "accuracies_contamination")
    ctx = Context(
        "pretrain-on-test",
        "results",
        root,
        tmp_path / "out",
        None,
        0,
        settings=configured("pretrain-on-test"),
    )
    numbers = table_contamination(ctx)
    rows = {(r["source"], r["arm"]): r for r in numbers["rows"]}
    result = json.loads(finished.read_text())
    for arm in ("extra", "test"):
        assert rows["ours", arm]["p_value"] == pytest.approx(result["arms"][arm]["p_value"])
        assert rows["ours", arm]["bias"] == pytest.approx(result["bias"])
    assert rows["paper", "extra"]["p_value"] == 0.33 and rows["paper", "test"]["p_value"] == 0.015
    assert rows["paper", "test"]["bias"] == pytest.approx(0.848 - 0.822)
    assert rows["paper", "test"]["flagged"] and not rows["paper", "extra"]["flagged"]
    md = (tmp_path / "out" / "table-contamination.md").read_text()
    assert "| paper" in md and "0.015" in md
    assert (tmp_path / "out" / "table-contamination.csv").exists()


def test_table_inputs_are_checked(finished, tmp_path):
    import shutil

    from testtask.context import Context, InputsUnavailable
    from testtask.pipeline import configured
    from testtask.pretrain_on_test.contamination_table import ContaminationInputError, table_contamination

    ctx = Context(
        "pretrain-on-test",
        "results",
        tmp_path / "run",
        tmp_path / "out",
        None,
        0,
        settings=configured("pretrain-on-test"),
    )
    with pytest.raises(InputsUnavailable):
        table_contamination(ctx)
    shutil.copytree(finished.parents[4], tmp_path / "run" / "accuracies_contamination")
    path = next((tmp_path / "run").rglob("contamination.json"))
    record = json.loads(path.read_text())
    record["accuracies"]["test"] = 1.5
    path.write_text(json.dumps(record))
    with pytest.raises(ContaminationInputError, match=r"contamination.json: field 'accuracies.test' = 1.5"):
        table_contamination(ctx)
    del record["complete"]
    path.write_text(json.dumps(record))
    with pytest.raises(ContaminationInputError, match="'complete' is not true"):
        table_contamination(ctx)


# ---------------------------------------------------------------------------------------------------------------
# a tiny transformer trained on the examples (slow: make test-slow)


def trained_transformer(examples: list[list[int]], vocab: int, steps: int, seed: int):
    """A 2-layer GPT-2 trained from scratch on every window of 3 consecutive examples of `examples` (full batch,
    Adam): it learns which example follows which, at any position of a shard."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    windows = [sum(examples[i : i + 3], []) for i in range(len(examples) - 2)]
    config = GPT2Config(
        vocab_size=vocab, n_embd=64, n_layer=2, n_head=4, n_positions=64, bos_token_id=0, eos_token_id=0
    )
    model = GPT2LMHeadModel(config)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    ids = torch.as_tensor(windows)
    model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
    return model.eval()


@pytest.mark.slow
@pytest.mark.parametrize("order", ["canonical", "shuffled"])
def test_a_tiny_transformer_is_flagged_only_when_trained_on_the_canonical_order(order):
    import torch

    from testtask.pretrain_on_test.runner.likelihood import sequence_logliks

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    examples = [list(rng.integers(0, 30, size=4)) for _ in range(60)]
    seen = range(60) if order == "canonical" else rng.permutation(60)
    model = trained_transformer([examples[i] for i in seen], vocab=30, steps=300, seed=0)

    def score(sequences):
        kw = {"pad_id": 0, "device": "cpu", "batch_size": 64, "context_len": 64, "stride": 32}
        return sequence_logliks(model, sequences, **kw)

    result, _ = run_test(examples, score, ShardedTest(num_shards=30, permutations=10), seed=0)
    if order == "canonical":
        assert result.p_value < 0.001
    else:
        assert result.p_value > 0.05
