"""The pretrain-on-test runner follows the authors' code (kddubey/pretrain-on-test@80fd183) by default.

Mechanism tests of the runner's protocol (the authors' code), each on tiny offline models or pure functions: balanced int(m/K)
stratification, per-task settings, learning rates and precision, per-stage truncation, the `majority` columns,
the §8 cells; for zero-shot the authors' prompt string, packs of shuffled texts joined by blank lines and the
normalised mean log-probability rule. docs/protocols/pretrain-on-test.md cites the authors' lines.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.fixtures.tiny_models import ROWS_PER_CLASS, build_model, fixture_frame, fixture_spec
from testtask.paths import conf_dir
from testtask.pretrain_on_test.runner import subsample as subsampling
from testtask.pretrain_on_test.runner.datasets import registry, spec_of
from testtask.schema import to_plain

PAPER_TASKS = 25


@pytest.fixture(scope="module", autouse=True)
def _single_thread_and_quiet():
    import torch
    import transformers

    threads = torch.get_num_threads()
    verbosity = transformers.logging.get_verbosity()
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    yield
    torch.set_num_threads(threads)
    transformers.logging.set_verbosity(verbosity)


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("pot_protocol_models")
    texts = fixture_frame()["text"]
    return {kind: build_model(kind, folder / kind, texts) for kind in ("bert", "llama")}


def compose(*overrides: str):
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        return hydra_compose("pretrain_on_test_run", overrides=list(overrides))


def typed(cfg):
    """The runner's typed settings of a composed config."""
    from testtask.runners import settings_of

    return settings_of("pretrain-on-test", cfg)


def effective(lm_name: str, dataset: str, *overrides: str):
    """The typed LM settings of `lm=<lm_name>` for `dataset` (its per-task keys applied)."""
    from testtask.pretrain_on_test.runner.settings import for_task

    return for_task(typed(compose(f"lm={lm_name}", *overrides)).lm, dataset)


# ---------------------------------------------------------------------------------------------------------------
# train stratification (item 9)


@pytest.mark.parametrize(("num_classes", "train_size"), [(18, 36), (6, 48), (4, 48), (2, 50)])
def test_balanced_floor_draws_int_m_over_k_per_class(num_classes, train_size):
    """m=50: int(50/K) texts per class whatever the class sizes, so train has floor(m/K)·K <= m rows."""
    rng = np.random.default_rng(num_classes)
    sizes = rng.integers(40, 400, size=num_classes)
    sizes[0] = 5000  # one dominant class: a proportional draw would give it most of train
    labels = rng.permutation(np.repeat(np.arange(num_classes), sizes))
    cfg = compose()
    assert cfg.stratification == "balanced_floor"
    sub = subsampling.draw(
        labels, 50, 100, seed=1, dataset="toy", repetition=0, stratification=cfg.stratification
    )
    per_class = np.bincount(labels[sub.train], minlength=num_classes)
    assert per_class.tolist() == [50 // num_classes] * num_classes
    assert len(sub.train) == train_size <= 50
    assert len(sub.extra) == len(sub.test) == 100
    assert len(np.unique(np.concatenate([sub.extra, sub.train, sub.test]))) == train_size + 200


def test_proportional_stratification_is_the_paper_text_option():
    assert compose("protocol=paper_text").stratification == "proportional"
    counts = subsampling.stratified_counts(np.array([5000, 100, 100]), 50, "proportional")
    assert counts.sum() == 50 and counts.tolist()[0] > 40


def test_balanced_floor_needs_int_m_over_k_per_class():
    with pytest.raises(subsampling.SubsampleError, match="too small"):
        subsampling.stratified_counts(np.array([500, 7]), 20, "balanced_floor")  # 10 needed, 7 there
    with pytest.raises(subsampling.SubsampleError, match="smaller than the number of classes"):
        subsampling.stratified_counts(np.array([50] * 18), 17, "balanced_floor")


# ---------------------------------------------------------------------------------------------------------------
# learning rates, schedule, precision, truncation (items 8, 10)


def test_few_shot_learning_rates_and_precision_are_the_authors():
    for name in ("bert", "gpt2", "gpt2_epochs_2"):
        lm = compose(f"lm={name}").lm
        assert lm.pretrain.learning_rate == pytest.approx(1e-4), name  # pretrain.py:74
        assert lm.classify.learning_rate == pytest.approx(5e-5), (
            name
        )  # HF default (classification.py:102-110)
        for stage, weight_decay in (("pretrain", 0.0), ("classify", 0.01)):
            hp = lm[stage]
            assert (hp.warmup_ratio, hp.precision, hp.optim) == (0.0, "fp32", "adamw_torch"), (name, stage)
            assert (hp.weight_decay, hp.lr_scheduler, hp.gradient_accumulation_steps) == (
                weight_decay,
                "linear",
                1,
            )
    assert compose("lm=bert").lm.pretrain.epochs == 2 and compose("lm=gpt2").lm.pretrain.epochs == 1
    assert compose("lm=gpt2_epochs_2").lm.pretrain.epochs == 2


def test_trainer_arguments_train_in_fp32_without_warmup_even_on_cuda(tmp_path):
    from testtask.pretrain_on_test.runner.training import training_arguments

    lm = typed(compose("lm=bert")).lm
    for stage, lr in (("pretrain", 1e-4), ("classify", 5e-5)):
        args = training_arguments(
            getattr(lm, stage),
            device="cuda",
            seed=0,
            output_dir=str(tmp_path),
            show_progress=False,
            gradient_checkpointing=False,
        )
        assert not args.bf16 and not args.fp16
        assert args.learning_rate == pytest.approx(lr) and args.warmup_steps == 0
        assert str(getattr(args.lr_scheduler_type, "value", args.lr_scheduler_type)) == "linear"


def test_classification_context_is_512_or_1024_and_256_in_the_paper_text():
    for name, classify in (("bert", 512), ("gpt2", 1024), ("gpt2_epochs_2", 1024)):
        lm = compose(f"lm={name}").lm
        assert (lm.pretrain.max_length, lm.classify.max_length) == (256, classify), name
        text = compose(f"lm={name}", "protocol=paper_text").lm
        assert (text.pretrain.max_length, text.classify.max_length) == (256, 256), name


def test_fewshot_truncates_each_stage_at_its_own_length(tiny_models, monkeypatch):
    """Pretraining features are cut at lm.pretrain.max_length, classification ones at lm.classify.max_length."""
    from testtask.pretrain_on_test.runner import fewshot
    from testtask.pretrain_on_test.runner.training import TrainStats

    seen: list[tuple[str, list[int]]] = []

    def fake_train(model, features, collate, hp, **kwargs):
        seen.append(
            ("classify" if "labels" in features[0] else "pretrain", [len(f["input_ids"]) for f in features])
        )
        return TrainStats(seconds=1.0, loss=0.0, tokens=1, positions=1)

    monkeypatch.setattr(fewshot, "train", fake_train)
    lm = effective(
        "bert",
        "fixture",
        f"lm.model={tiny_models['bert']}",
        "lm.pretrain.max_length=5",
        "lm.classify.max_length=8",
    )
    labels = fixture_frame()["label"].to_numpy()
    sub = subsampling.draw(
        labels, 9, 12, seed=0, dataset="fixture", repetition=0, stratification="balanced_floor"
    )
    fewshot.FewShot(lm, num_classes=3, device="cpu", show_progress=False).run(fixture_frame(), sub, seed=0)
    lengths = {stage: [n for s, ns in seen if s == stage for n in ns] for stage in ("pretrain", "classify")}
    assert len(seen) == 5  # base, pretrain extra, classify extra, pretrain test, classify test
    assert max(lengths["pretrain"]) == 5
    assert max(lengths["classify"]) == 8  # texts of 4-8 words + [CLS] and [SEP] reach the classification cut


# ---------------------------------------------------------------------------------------------------------------
# per-task settings (item 10)

# kddubey/pretrain-on-test@80fd183:experiment.sh (every m/n block): (pretrain batch, classify epochs, classify batch)
EXPERIMENT_SH = {
    "bert": {
        "yahoo_answers_topics": (8, 1, 16),
        "enron_spam": (8, 1, 4),
        "yelp_review_full": (8, 1, 4),
        "FRENK-hate-en": (8, 1, 8),
        "blog_authorship_corpus": (8, 1, 8),
        "craigslist_bargains": (8, 1, 8),
        "movie_rationales": (8, 1, 8),
    },
    "gpt2": {
        "yahoo_answers_topics": (8, 1, 4),
        "blog_authorship_corpus": (8, 1, 4),
        "craigslist_bargains": (8, 1, 4),
        "enron_spam": (8, 1, 4),
        "movie_rationales": (8, 1, 4),
        "yelp_review_full": (8, 1, 4),
        "FRENK-hate-en": (8, 1, 8),
        "app_reviews": (16, 3, 8),
    },
}


@pytest.mark.parametrize("name", ["bert", "gpt2", "gpt2_epochs_2"])
def test_per_task_settings_resolve_as_in_experiment_sh(name):
    tasks = registry(compose().datasets)
    assert len(tasks) == PAPER_TASKS
    expected = EXPERIMENT_SH["bert" if name == "bert" else "gpt2"]
    assert set(compose(f"lm={name}").lm.per_task) == set(expected)
    for task in tasks:
        lm = effective(name, task)
        got = (lm.pretrain.batch_size, lm.classify.epochs, lm.classify.batch_size)
        assert got == expected.get(task, (16, 3, 16)), (name, task)
        assert lm.per_task is None
    assert effective("bert", "enron_spam").classify.epochs == 1
    assert effective("bert", "enron_spam").classify.batch_size == 4


def test_per_task_override_reaches_the_protocol_and_the_cell_record(tmp_path, monkeypatch):
    """run_cell hands the protocol the dataset's effective settings and records them in cell.yaml."""
    from omegaconf import OmegaConf

    from testtask.pretrain_on_test.runner.cell import run_cell

    seen = {}

    class Stub:
        def run(self, data, sub, seed):
            return {"base": 0.5, "extra": 0.5, "test": 0.5}, {}

    def make_protocol(lm, spec, device, show_progress):
        seen["lm"] = lm
        return Stub()

    monkeypatch.setattr("testtask.pretrain_on_test.runner.cell.make_protocol", make_protocol)
    fixture_frame().to_csv(tmp_path / "fixture.csv", index=False)
    cfg = compose(
        "dataset=fixture",
        "m=9",
        "n=12",
        "repetitions=1",
        "device=cpu",
        f"results_dir={tmp_path}",
        f"assets_dir={tmp_path}",
    )
    OmegaConf.set_struct(cfg, False)
    cfg.datasets.fixture = fixture_spec()
    cfg.lm.per_task.fixture = {"classify": {"epochs": 7}}
    csv = run_cell(typed(cfg), cfg)
    assert seen["lm"].classify.epochs == 7 and seen["lm"].per_task is None
    assert OmegaConf.load(csv.parent / "cell.yaml").lm.classify.epochs == 7


def test_per_task_override_with_an_unknown_key_fails():
    from testtask.pretrain_on_test.runner.settings import SettingsError, effective_lm

    lm = {"classify": {"epochs": 3}, "per_task": {"x": {"clasify": {"epochs": 1}}}}
    with pytest.raises(SettingsError, match=r"lm\.per_task\.x\.clasify"):
        effective_lm(lm, "x")


# ---------------------------------------------------------------------------------------------------------------
# accuracies.csv columns and the §8 cells (item 13)


def test_majority_columns_mean_what_the_authors_wrote(tmp_path, monkeypatch):
    """majority = the test set's majority-class share; majority_all = the majority share of the whole dataset."""
    from omegaconf import OmegaConf

    from testtask.pretrain_on_test.runner.cell import run_cell
    from testtask.pretrain_on_test.runner.store import CellStore

    class Stub:
        def run(self, data, sub, seed):
            return {"base": 0.5, "extra": 0.5, "test": 0.5}, {}

    monkeypatch.setattr("testtask.pretrain_on_test.runner.cell.make_protocol", lambda *a, **k: Stub())
    fixture_frame().to_csv(tmp_path / "fixture.csv", index=False)
    cfg = compose(
        "dataset=fixture",
        "m=9",
        "n=12",
        "repetitions=3",
        "device=cpu",
        f"results_dir={tmp_path}",
        f"assets_dir={tmp_path}",
    )
    OmegaConf.set_struct(cfg, False)
    cfg.datasets.fixture = fixture_spec()
    csv = run_cell(typed(cfg), cfg)
    frame = pd.read_csv(csv)
    labels = fixture_frame()["label"].to_numpy()
    for k, record in enumerate(CellStore(csv.parent).log_records()):
        test = labels[record["subsample"]["test"]]
        assert frame["majority"][k] == pytest.approx(np.bincount(test).max() / len(test))
    assert np.allclose(frame["majority_all"], max(ROWS_PER_CLASS) / sum(ROWS_PER_CLASS))  # 60/150, not 1/3


def test_overtraining_sweeps_the_six_cells_the_authors_ran():
    cells = compose("experiment=pretrain_on_test/overtraining").overtraining_cells
    got = {(c.m, c.n) for c in cells.values()}
    assert got == {(100, 50), (100, 100), (100, 200), (100, 500), (50, 50), (50, 200)}
    cfg = compose("experiment=pretrain_on_test/overtraining", "cell=m50_n200")
    assert (cfg.m, cfg.n, cfg.lm.lm_type, cfg.lm.pretrain.epochs) == (50, 200, "gpt2-epochs-2", 2)


# ---------------------------------------------------------------------------------------------------------------
# zero-shot (items 11, 12)

AG_NEWS_INSTRUCTION = (
    "Your task is to classify a given text as one of these categories:\n"
    "World\nSports\nBusiness\nSci/Tech\n\n"
    "The text is a news article. Answer with its topic.\n\n"
)


def prompt_builder(tiny_models, dataset: str = "ag_news"):
    from testtask.pretrain_on_test.runner.fewshot import load_tokenizer
    from testtask.pretrain_on_test.runner.zeroshot import PromptBuilder

    settings = typed(compose("lm=mistral_qlora"))
    tokenizer = load_tokenizer(str(tiny_models["llama"]))
    lm = settings.lm
    return PromptBuilder(tokenizer, settings.datasets[dataset], lm.prompt, lm.scoring_tokenization)


def test_prompt_is_the_authors_template_string(tiny_models):
    """kddubey/pretrain-on-test@80fd183:src/pretrain_on_test/_dum.py:35-70 with data.py's ag_news entry (App. G)."""
    prompts = prompt_builder(tiny_models)
    text = "Bombardier CEO Quits, Shares Dive Paul Tellier stepped down on Monday."
    assert prompts.instruction == AG_NEWS_INSTRUCTION
    assert prompts.prompt(text) == AG_NEWS_INSTRUCTION + f"### Text: {text}\n ### Answer:"
    long = "x" * 999 + "yz"
    assert prompts.prompt(long) == AG_NEWS_INSTRUCTION + "### Text: " + "x" * 999 + "y\n ### Answer:"
    # packing: the instruction once, then text blocks joined by a blank line, no answer marker
    assert prompts.packed(["a", "b", "c"], 8) == [
        AG_NEWS_INSTRUCTION + "### Text: a\n\n\n### Text: b\n\n\n### Text: c\n"
    ]


def test_authors_task_descriptions_are_used():
    specs = registry(compose().datasets)
    assert specs["ag_news"].description == "The text is a news article. Answer with its topic."
    assert specs["limit"].description == (
        "Answer with whether the text describes the movement of a physical entity (motion) or not (no motion)."
    )
    assert specs["disaster_response_messages"].description.endswith("most likely source of the message")


def label_sorted_data(per_class: int = 200) -> pd.DataFrame:
    """A split sorted by label, as many Hugging Face splits are: text t<i> has label i // per_class."""
    labels = np.repeat(np.arange(3), per_class)
    return pd.DataFrame({"text": [f"t{i}" for i in range(len(labels))], "label": labels})


def zero_shot(tiny_models, *overrides: str):
    from testtask.pretrain_on_test.runner.zeroshot import ZeroShot

    spec = registry(compose().datasets)["ag_news"]
    lm = effective(
        "mistral_qlora", "ag_news", f"lm.model={tiny_models['llama']}", "lm.quantization=none", *overrides
    )
    return ZeroShot(lm, spec, device="cpu", show_progress=False)


def test_packs_mix_the_split_in_its_shuffled_order(tiny_models):
    """On a label-sorted split a pack holds several labels: texts are packed in the random draw order."""
    data = label_sorted_data()
    labels = data["label"].to_numpy()
    sub = subsampling.draw(
        labels, 9, 100, seed=3, dataset="sorted", repetition=0, stratification="balanced_floor"
    )
    assert not (np.diff(sub.extra) > 0).all()  # draw order, not sorted index order
    zs = zero_shot(tiny_models, "lm.packing=true")
    texts = data["text"].iloc[sub.extra].tolist()
    packs = zs.pretraining_texts(texts)
    assert len(packs) == 13  # 100 texts, 8 per pack
    first = [int(block.split("### Text: t")[1]) for block in packs[0].split("\n\n\n")]
    assert first == sub.extra[:8].tolist()
    assert len(set(labels[first])) > 1
    assert packs[0] == zs.prompts.instruction + "\n\n".join(f"### Text: {t}\n" for t in texts[:8])
    assert "### Answer:" not in "".join(packs)


def test_packing_trains_13_steps_of_one_pack():
    for task in ("ag_news", "enron_spam"):  # per-task batch sizes do not reach packing
        lm = to_plain(effective("mistral_qlora_packing", task))
        hp = lm["pretrain"]
        assert (lm["pack_size"], hp["batch_size"], hp["gradient_accumulation_steps"], hp["epochs"]) == (
            8,
            1,
            1,
            1,
        )
        assert lm["max_seq_length"] == 8192
        assert -(-100 // lm["pack_size"]) // hp["batch_size"] == 13


def test_zero_shot_training_defaults_are_the_authors():
    for task, batch in (("ag_news", 16), ("enron_spam", 8), ("yelp_review_full", 8), ("trec", 16)):
        lm = to_plain(effective("mistral_qlora", task))
        hp = lm["pretrain"]
        assert hp["batch_size"] == batch, task
        assert hp["learning_rate"] == pytest.approx(2e-4) and hp["optim"] == "paged_adamw_8bit"
        assert (hp["warmup_ratio"], hp["gradient_accumulation_steps"], hp["epochs"], hp["precision"]) == (
            0.0,
            1,
            1,
            "bf16",
        )
        assert lm["max_seq_length"] == 512 and lm["prompt"]["max_text_chars"] == 1000
        assert lm["prediction"] == "mean_logprob" and lm["score_on_plain_load"] is True


def test_prediction_rule_is_the_normalised_mean_log_probability():
    """A one-token class at log p -1.0 against a two-token class at -0.6 per token: sum and mean disagree."""
    from testtask.pretrain_on_test.runner.zeroshot import class_probabilities

    token_logprobs = [[np.array([-1.0]), np.array([-0.6, -0.6])]]
    mean = class_probabilities(token_logprobs, "mean_logprob")
    np.testing.assert_allclose(mean, [[np.exp(-1.0), np.exp(-0.6)]] / (np.exp(-1.0) + np.exp(-0.6)))
    assert mean.argmax() == 1
    assert class_probabilities(token_logprobs, "sum_logprob").argmax() == 0  # exp(-1.0) > exp(-1.2)


def test_zero_shot_scores_multi_token_class_names_by_their_mean(tiny_models):
    """ZeroShot.class_probabilities = exp(mean token log-prob) of ' <class>' after the prompt, normalised."""
    import torch

    from testtask.pretrain_on_test.runner.zeroshot import ZeroShot

    spec = spec_of(
        "multi",
        {"classes": ["sports", "the very food", "music"], "description": "The text is a note.", "path": "x"},
    )
    lm = effective("mistral_qlora", "multi", f"lm.model={tiny_models['llama']}", "lm.quantization=none")
    zs = ZeroShot(lm, spec, device="cpu", show_progress=False)
    texts = fixture_frame()["text"][:3].tolist()
    got = zs.class_probabilities(zs.model, texts)
    for i, text in enumerate(texts):
        prompt, names = zs.prompts.scoring_ids(text)
        assert [len(n) for n in names] == [1, 3, 1]
        means = []
        for name in names:
            with torch.no_grad():
                logp = torch.log_softmax(
                    zs.model(input_ids=torch.tensor([prompt + name])).logits[0].float(), -1
                )
            means.append(np.mean([float(logp[len(prompt) - 1 + j, t]) for j, t in enumerate(name)]))
        expected = np.exp(means) / np.exp(means).sum()
        np.testing.assert_allclose(got[i], expected, rtol=1e-4)


def test_adapters_are_scored_on_the_plain_load(tiny_models):
    """With a separate training model (nf4 on GPU), trained adapters are copied onto the scoring model."""
    from testtask.pretrain_on_test.runner.zeroshot import load_causal_lm

    # fp32: a Trainer that trained under bf16 autocast leaves accelerate's autocast wrapper on the trained model's
    # forward, so the trained model and the plain scoring load would be compared at different precisions
    zs = zero_shot(tiny_models, "lm.pretrain.learning_rate=0.05", "lm.pretrain.precision=fp32")
    zs.training_model, zs.shared = load_causal_lm(zs.lm, "cpu", prepare=True), False
    texts = fixture_frame()["text"][:5].tolist()
    base = zs.class_probabilities(zs.model, texts)
    trained, _ = zs.pretrain(texts, seed=1)
    scorer = zs.scoring_model(trained)
    assert scorer is not trained and scorer.base_model.model is zs.model
    np.testing.assert_allclose(
        zs.class_probabilities(scorer, texts), zs.class_probabilities(trained, texts), atol=1e-6
    )
    assert not np.allclose(zs.class_probabilities(scorer, texts), base, atol=1e-4)
    zs.drop_adapters(trained, scorer)
    assert not any("lora_" in k for k in zs.model.state_dict())
    np.testing.assert_allclose(zs.class_probabilities(zs.model, texts), base, atol=1e-6)
