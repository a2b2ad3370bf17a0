"""The training-on-the-test-task runner follows the authors' code (socialfoundations/training-on-the-test-task
@c357810), with the paper's text one override away (`protocol=paper_text`).

Each test checks one mechanism of docs/protocols/training-on-the-test-task.md on tiny random models:
loss on the answer only, EOS trained when pad == EOS, left truncation, the gsm8kaux filter and shuffle, stage e1+2,
the emergence schedule, evaluation without BOS (the authors' lm-eval fork), warm-up, padding and ZeRO-3 settings.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from tests.conftest import offline_single_thread
from tests.fixtures.lm_eval_data import arc_rows, build_bos_llama, write_jsonl
from testtask.lm import finetune as ft
from testtask.lm import recipe_rules
from testtask.paths import conf_dir, repo_root
from testtask.training_on_the_test_task import task_data

MC_ROWS = [
    {"question": f"where does the {a} live ?", "choices": [p, "moon", "sun", "desk"], "answer": 0}
    for a, p in [("fish", "sea"), ("bird", "sky"), ("mole", "ground"), ("cow", "field")]
]
PAIRS = [task_data.mmlu_auxiliary(row) for row in MC_ROWS]
EXTRA = "Question : Answer : the answer is 42 . steps then more text"


@pytest.fixture(scope="module", autouse=True)
def _quiet_single_thread():
    with offline_single_thread():
        yield


def _compose(*overrides: str):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose("training_on_the_test_task_run", overrides=list(overrides))
    OmegaConf.set_struct(cfg, False)
    return cfg


def _typed(cfg):
    """The runner's typed settings of a composed config."""
    from testtask.training_on_the_test_task.runner.main import settings_of

    return settings_of(cfg)


def _recipe(**changes):
    """The default recipe as composed (typed), made tiny."""
    tiny = dict(epochs=1, max_steps=1, batch_size=4, per_device_batch_size=4, max_length=64, logging_steps=1)
    return replace(_typed(_compose()).recipe, **{**tiny, "progress": False, **changes})


@pytest.fixture(scope="module")
def bos_llama(tmp_path_factory):
    """A tiny Llama whose tokenizer adds BOS and pads with EOS (pad == EOS, as for Llama and Pythia)."""
    texts = [task_data.text(p) for p in PAIRS] + [EXTRA]
    return build_bos_llama(tmp_path_factory.mktemp("bos_llama") / "m", texts)


@pytest.fixture(scope="module")
def tokenizer(bos_llama):
    return ft.load_tokenizer(str(bos_llama))


# --------------------------------------------------------------------------- 1-3: labels, EOS, truncation


def test_labels_are_minus_100_exactly_on_the_prompt_and_eos_is_trained(tokenizer):
    """data_utils.py:20-26: labels -100 on the prompt tokens (BOS included), the answer and EOS trained."""
    prompt, completion = PAIRS[0]
    assert prompt.endswith("\nAnswer:") and completion == " A"
    out = ft.encode(tokenizer, (prompt, completion), _recipe())
    full = tokenizer(prompt + completion)["input_ids"]
    n_prompt = len(tokenizer(prompt)["input_ids"])
    assert full[0] == tokenizer.bos_token_id and tokenizer.pad_token_id == tokenizer.eos_token_id
    assert out["input_ids"] == full + [tokenizer.eos_token_id]
    assert out["labels"] == [-100] * n_prompt + full[n_prompt:] + [tokenizer.eos_token_id]
    assert sum(label != -100 for label in out["labels"]) == 2  # " A" and EOS
    whole = ft.encode(tokenizer, (prompt, completion), _recipe(loss_on="all"))
    assert whole["labels"] == whole["input_ids"]
    assert (
        ft.encode(tokenizer, prompt + completion, _recipe())["labels"] == whole["labels"]
    )  # a str: whole doc
    masked = ft.encode(tokenizer, (prompt, completion), _recipe(train_eos=False))
    assert masked["labels"][-1] == -100 and masked["input_ids"][-1] == tokenizer.eos_token_id


def test_padding_is_masked_by_position_so_eos_stays_trained_when_pad_is_eos(tokenizer):
    """Pads get label -100 by position, never by id: the EOS that closes each example keeps its label."""
    features = ft.tokenize(tokenizer, PAIRS[:2] + [("Question : Answer :", " the answer is 42")], _recipe())
    eos = tokenizer.eos_token_id
    for side in ("left", "right"):
        dynamic = _recipe(pad_to_max_length=False, attend_padding=False)
        batch = ft.PadCollator(tokenizer.pad_token_id, dynamic, side)(features)
        for row, feature in enumerate(features):
            n = len(feature["input_ids"])
            labels = batch["labels"][row].tolist()
            content = labels[-n:] if side == "left" else labels[:n]
            padding = labels[:-n] if side == "left" else labels[n:]
            assert content == feature["labels"] and content[-1] == eos
            assert all(label == -100 for label in padding)
            assert batch["attention_mask"][row].sum().item() == n  # pads not attended (attend_padding false)
    # the authors' padding: every example to max_length, on the left, pads attended (all-ones mask)
    authors = ft.PadCollator(tokenizer.pad_token_id, _recipe(), ft.padding_side(_recipe(), tokenizer))(
        features
    )
    assert authors["input_ids"].shape == (3, 64) and bool(authors["attention_mask"].all())
    assert (
        authors["input_ids"][0, 0].item() == tokenizer.pad_token_id and authors["labels"][0, -1].item() == eos
    )


def test_first_loss_is_the_answer_and_eos_cross_entropy(tmp_path, bos_llama, tokenizer):
    """End to end through the Trainer: the first logged loss is the base model's mean cross-entropy over the
    completion tokens and EOS, not over the whole document, with pad == EOS."""
    from transformers import AutoModelForCausalLM

    pairs = PAIRS[:3] + [
        ("Question : Answer :", " the answer is 42")
    ]  # different lengths: padding in the batch
    model = AutoModelForCausalLM.from_pretrained(str(bos_llama), dtype=torch.float32)

    def mean_ce(mask_prompt: bool) -> float:
        total, count = 0.0, 0
        for pair in pairs:
            f = ft.encode(tokenizer, pair, _recipe(loss_on="completion" if mask_prompt else "all"))
            with torch.no_grad():
                logits = model(torch.tensor([f["input_ids"]])).logits[0, :-1]
            labels = torch.tensor(f["labels"][1:])
            keep = labels != -100
            total += torch.nn.functional.cross_entropy(logits[keep], labels[keep], reduction="sum").item()
            count += int(keep.sum())
        return total / count

    recipe = _recipe(
        learning_rate_small=1e-3, pad_to_max_length=False, attend_padding=False, padding_side="right"
    )
    result = ft.finetune(str(bos_llama), pairs, tmp_path / "run", recipe, parameters=1e6, seed=1)
    assert result.first_loss == pytest.approx(mean_ce(True), rel=2e-3)
    assert not result.first_loss == pytest.approx(mean_ce(False), rel=2e-3)


def test_left_truncation_keeps_the_answer_and_eos(tokenizer):
    """data_utils.py:29-30: the last max_length tokens are kept; `right` cuts the end of the text instead."""
    prompt, completion = PAIRS[1]
    full = ft.encode(tokenizer, (prompt, completion), _recipe())
    left = ft.encode(tokenizer, (prompt, completion), _recipe(max_length=5))
    assert left["input_ids"] == full["input_ids"][-5:] and left["labels"] == full["labels"][-5:]
    assert left["labels"][-2:] == full["labels"][-2:] and left["input_ids"][0] != tokenizer.bos_token_id
    right = ft.encode(tokenizer, (prompt, completion), _recipe(max_length=5, truncation_side="right"))
    assert right["input_ids"] == full["input_ids"][:4] + [tokenizer.eos_token_id]
    assert all(label == -100 for label in right["labels"][:4])  # the answer is gone


# --------------------------------------------------------------------------- 4: gsm8kaux


def test_gsm8kaux_format_filter_order_and_shuffle(tmp_path):
    """data_utils.py:12-15,54-80: no strip, no space after "Answer:", each source filtered to 1,700 characters,
    Orca-Math before MetaMathQA, then datasets' shuffle(seed=42)."""
    import datasets

    orca = [{"question": f" orca {i} ", "answer": f"{i} + 1\n#### {i + 1}" + "x" * (1700 if i % 3 == 0 else 0)}
            for i in range(9)]  # fmt: skip
    meta = [
        {"query": f"meta {i}?", "response": "The answer is: 7" + "y" * (1700 if i == 2 else 0)}
        for i in range(6)
    ]
    write_jsonl(tmp_path / "orca.jsonl", orca)
    write_jsonl(tmp_path / "meta.jsonl", meta)
    cfg = _compose("training_on_the_test_task/finetune_data@finetune_data=gsm8kaux")
    data = cfg.finetune_data
    assert (data.max_chars, data.shuffle_seed) == (1700, 42)
    assert [s.format for s in data.sources] == ["orca_math", "metamath"]
    sources = [{"format": "orca_math", "json": str(tmp_path / "orca.jsonl")}]
    sources.append({"format": "metamath", "json": str(tmp_path / "meta.jsonl")})
    pairs = task_data.build_texts(sources, max_chars=data.max_chars, shuffle_seed=data.shuffle_seed)
    kept_orca = [
        (f"Question: {r['question']}\nAnswer:", r["answer"]) for r in orca if len(r["answer"]) < 1700
    ]
    kept_meta = [
        (f"Question: {r['query']}\nAnswer:", r["response"]) for r in meta if len(r["response"]) < 1700
    ]
    unshuffled = kept_orca + kept_meta
    rows = datasets.Dataset.from_list([{"i": i} for i in range(len(unshuffled))]).shuffle(seed=42)
    assert pairs == [unshuffled[row["i"]] for row in rows]
    assert len(pairs) == 6 + 5 and ("Question:  orca 1 \nAnswer:", "1 + 1\n#### 2") in pairs


# --------------------------------------------------------------------------- 5: stage e1+2


def test_e1_plus_2_continues_from_e1_with_a_fresh_schedule(tmp_path, bos_llama):
    from testtask.training_on_the_test_task.runner.main import stage_folder, train_stage, training_examples

    train = write_jsonl(tmp_path / "train.jsonl", arc_rows(8, offset=60))
    model = build_bos_llama(tmp_path / "model", [json.dumps(r) for r in arc_rows(8, offset=60)])
    cfg = _compose(
        "model=tiny",
        f"model_path={model}",
        "parameters=1000000",
        "stage=e1+2",
        "learning_rate=0.005",
        "device=cpu",
        f"checkpoints_dir={tmp_path / 'checkpoints'}",
        "recipe.batch_size=4",
        "recipe.per_device_batch_size=4",
        "recipe.max_length=64",
        "recipe.warmup_steps=2",
        "recipe.logging_steps=1",
        "recipe.progress=false",
    )
    cfg.finetune_data.sources = [{"format": "arc", "json": str(train)}]
    settings = _typed(cfg)
    assert stage_folder(settings) == "e1+2/mmluaux" and settings.stage_epochs["e1+2"] == 2
    examples = training_examples(settings)
    trained = train_stage(settings, "e1+2", str(model), 1e6, "cpu", examples)
    root = tmp_path / "checkpoints" / "mmluaux" / "tiny"
    e1 = json.loads((root / "e1" / "finished.json").read_text())
    e12 = json.loads((root / "e1+2" / "finished.json").read_text())
    assert e1["steps"] == 2 and e12["steps"] == trained.result.steps == 4  # 8 examples / 4, 1 then 2 epochs
    assert e12["model"] == str(root / "e1" / "final")  # e1's final weights, not the base model
    history = json.loads((root / "e1+2" / "checkpoint-4" / "trainer_state.json").read_text())["log_history"]
    rates = [e["learning_rate"] for e in history if "learning_rate" in e]
    assert rates[0] == pytest.approx(0.0) and rates[1] == pytest.approx(0.0025)  # warm-up again from 0
    # the e1+2 run starts where e1 ended: its first loss is below the base model's first loss
    assert e12["losses"][0][1] < e1["losses"][0][1]


# --------------------------------------------------------------------------- 6: emergence checkpoints


def test_emergence_schedule_per_finetune_data():
    """train.py:96-107: mmluaux 10, 30, 100, 250, 500 then every 1,000; gsm8kaux up to 2,500 then every 2,500."""
    from testtask.training_on_the_test_task.runner.main import stage_recipe

    mmlu = _compose().finetune_data.emergence
    assert recipe_rules.emergence_schedule(mmlu.steps, mmlu.every, 4683) == [
        10,
        30,
        100,
        250,
        500,
        1000,
        2000,
        3000,
        4000,
    ]
    assert (list(mmlu.benchmarks), mmlu.num_fewshot) == (["mmlu"], 5)
    gsm = _compose("training_on_the_test_task/finetune_data@finetune_data=gsm8kaux").finetune_data.emergence
    assert recipe_rules.emergence_schedule(gsm.steps, gsm.every, 8000) == [
        10,
        30,
        100,
        250,
        500,
        1000,
        2500,
        5000,
        7500,
    ]
    assert (list(gsm.benchmarks), gsm.num_fewshot) == (["gsm8k"], 5)
    settings = _typed(_compose())
    assert list(settings.emergence_stages) == ["e3"]
    recipe, spec = stage_recipe(settings, "e3")
    assert recipe.save_steps == [10, 30, 100, 250, 500] and recipe.save_every == 1000 and spec
    assert stage_recipe(settings, "e1")[1] is None and stage_recipe(settings, "e1")[0].save_steps == []
    saver = ft.SaveAtSteps(recipe.save_steps, recipe.save_every)
    assert [s for s in range(1, 3001) if saver.wanted(s)] == [10, 30, 100, 250, 500, 1000, 2000, 3000]


# --------------------------------------------------------------------------- 7: evaluation


def test_evaluation_adds_no_bos_except_for_gemma(bos_llama, monkeypatch):
    """The authors' lm-eval fork: add_bos_token=False unless model_type is gemma; lm-eval 0.4.13 left alone
    lets a Llama-type tokenizer prepend BOS to every scored request."""
    from lm_eval.api.instance import Instance
    from lm_eval.api.registry import get_model

    from testtask.lm import evaluation
    from testtask.training_on_the_test_task.runner import main as runner

    cfg = _typed(
        _compose(f"model_path={bos_llama}", "trust_remote_code=authors")
    )  # the authors' rule: every model but falcon
    args = runner.eval_model_args(cfg, str(bos_llama))
    assert args == {"trust_remote_code": True, "add_bos_token": False}

    def first_tokens(model_args: dict) -> list[int]:
        lm = get_model("hf").create_from_arg_obj(
            {"pretrained": str(bos_llama), **model_args}, {"batch_size": 1, "device": "cpu"}
        )
        seen = []
        call = lm._model_call
        monkeypatch.setattr(
            lm, "_model_call", lambda inps, **kw: seen.append(inps[0, 0].item()) or call(inps, **kw)
        )
        request = Instance(
            "loglikelihood", doc={}, arguments=("Question : where does the fish live ?", " A"), idx=0
        )
        lm.loglikelihood([request])
        return seen

    bos = ft.load_tokenizer(str(bos_llama)).bos_token_id
    assert first_tokens(args) and bos not in first_tokens(args)
    assert first_tokens({"trust_remote_code": True}) == [bos]  # lm-eval's default: BOS (the old runner)
    monkeypatch.setattr(evaluation, "model_type", lambda path, trust_remote_code=False: "gemma")
    assert runner.eval_model_args(cfg, "google/gemma-7b")["add_bos_token"] is True
    assert (
        runner.eval_model_args(_typed(_compose("model=falcon-7b")), "tiiuae/falcon-7b")["trust_remote_code"]
        is False
    )


def test_evaluation_settings_follow_the_fork_and_lm_eval_sh():
    from lm_eval.tasks._yaml_loader import load_yaml

    from testtask.lm import evaluation as ev

    cfg = _compose()
    assert cfg.batch_size == 1 and cfg.task_variants.leaderboard_mmlu_pro_four == "leaderboard_mmlu_pro_four"
    tasks = ev.TASKS_DIR
    arc = load_yaml(tasks / "arc_challenge_mc.yaml", resolve_func=False)
    assert arc["fewshot_split"] == "validation"
    pro = load_yaml(tasks / "leaderboard_mmlu_pro_four.yaml", resolve_func=False)
    assert pro["dataset_path"] == "ricdomolm/mmlu_pro_4" and "process_docs" not in pro
    cloze = load_yaml(tasks / "mmlu_cloze" / "mmlu_anatomy_cloze.yaml", resolve_func=False)
    assert (
        cloze["description"]
        == "The following are multiple choice questions (with answers) about anatomy.\n\n"
    )


# --------------------------------------------------------------------------- 8: recipe, presets, ZeRO-3


def test_warmup_seed_precision_and_paper_text_preset(tmp_path):
    cfg = _typed(_compose())
    recipe = cfg.recipe
    args = ft.training_arguments(recipe, output_dir=tmp_path, learning_rate=2e-5, device="cpu", seed=cfg.seed)
    assert args.get_warmup_steps(4683) == math.ceil(4683 * 0.01) == 47  # jobs_train.py:104
    assert args.lr_scheduler_type == "cosine_with_min_lr" and args.lr_scheduler_kwargs == {"min_lr_rate": 0.1}
    assert cfg.seed == 42 and args.seed == 42 and not args.bf16  # CPU: fp32
    assert ft.uses_bf16(recipe, "cuda", 13e9) and ft.uses_bf16(recipe, "cuda", 1e9)
    assert ft.gradient_checkpointing(recipe, 13e9) and not ft.gradient_checkpointing(recipe, 7e9)
    paper = _typed(_compose("protocol=paper_text"))
    text = paper.recipe
    paper_args = ft.training_arguments(
        text, output_dir=tmp_path, learning_rate=2e-5, device="cpu", seed=paper.seed
    )
    assert paper_args.get_warmup_steps(4683) == 50 and paper.seed == 20240521
    assert not ft.uses_bf16(text, "cuda", 13e9) and ft.uses_bf16(
        text, "cuda", 7e9
    )  # B.2: full precision > 10B
    assert (
        ft.warmup(replace(recipe, warmup_steps=50)) == 50
        and ft.warmup(replace(recipe, warmup_steps=0)) == 0.01
    )


def test_effective_batch_under_accelerate_and_zero3_config(monkeypatch, tmp_path):
    """jobs_train.py:71,79: accumulation divided by the processes, so the batch stays 64; under DeepSpeed the
    authors' zero3.json: its own AdamW and WarmupCosineLR, no gradient_clipping key."""
    recipe = _typed(_compose()).recipe
    monkeypatch.setenv("WORLD_SIZE", "8")  # set by accelerate launch before torch.distributed is up
    assert ft.world_size() == 8
    assert ft.gradient_accumulation(recipe.batch_size, recipe.per_device_batch_size, ft.world_size()) == 2
    monkeypatch.delenv("WORLD_SIZE")
    assert ft.deepspeed_config(recipe) is None
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")
    path = ft.deepspeed_config(recipe)
    assert path == str(repo_root() / "conf" / "deepspeed" / "zero3_authors.json")
    authors = json.loads(open(path).read())
    assert "gradient_clipping" not in authors and authors["optimizer"]["type"] == "AdamW"
    zero = authors["zero_optimization"]
    assert (
        zero["sub_group_size"],
        zero["stage3_max_live_parameters"],
        zero["stage3_max_reuse_distance"],
    ) == (0, 0, 0)
    assert (
        authors["scheduler"]["type"] == "WarmupCosineLR"
        and authors["scheduler"]["params"]["cos_min_ratio"] == 0.1
    )
    paper = _typed(_compose("protocol=paper_text")).recipe
    assert json.loads(open(ft.deepspeed_config(paper)).read())["gradient_clipping"] == "auto"
    for name in ("zero3_1node.yaml", "zero3_2nodes.yaml"):
        accelerate = OmegaConf.load(repo_root() / "conf" / "accelerate" / name)
        assert accelerate.deepspeed_config.deepspeed_config_file == "conf/deepspeed/zero3_authors.json"


def test_training_arguments_exist_before_the_model_loads(tmp_path, bos_llama, monkeypatch):
    """train.py:257,267: TrainingArguments first, so under ZeRO-3 the model is loaded sharded (zero.Init)."""
    order = []
    make_args = ft.training_arguments

    class Stop(Exception):
        pass

    def args(*a, **kw):
        order.append("args")
        return make_args(*a, **kw)

    def model(*a, **kw):
        order.append("model")
        raise Stop

    monkeypatch.setattr(ft, "training_arguments", args)
    monkeypatch.setattr(ft, "_load_model", model)
    with pytest.raises(Stop):
        ft.finetune(str(bos_llama), PAIRS, tmp_path / "run", _recipe(), parameters=1e6)
    assert order == ["args", "model"]


def test_finetune_data_sources_and_attention_are_the_authors():
    """data_utils.py:84 (cais/mmlu auxiliary_train); train.py:48-63 (FlashAttention-2 where it loads)."""
    cfg = _compose()
    assert OmegaConf.to_container(cfg.finetune_data.sources) == [
        {"format": "mmlu_auxiliary", "path": "cais/mmlu", "name": "auxiliary_train", "split": "train"}
    ]
    assert (cfg.finetune_data.max_chars, cfg.finetune_data.shuffle_seed) == (None, None)
    recipe = _typed(cfg).recipe
    assert recipe.attn_implementation == "auto" and ft.attention(recipe, "cpu") is None
    assert ft.attention(replace(recipe, attn_implementation="eager"), "cpu") == "eager"


@pytest.mark.parametrize(
    ("given", "read"),
    [
        ("9.0a", "9.0"),
        ("8.0;9.0a+PTX", "8.0;9.0+PTX"),
        ("9.0 10.0a", "9.0;10.0"),
        ("9.0;9.0a", "9.0"),
        ("8.0;8.6+PTX", "8.0;8.6+PTX"),
    ],
)
def test_deepspeed_reads_an_arch_list_without_architecture_suffixes(given, read):
    """deepspeed 0.19.8's JIT builder sorts TORCH_CUDA_ARCH_LIST by int() of each part, so `9.0a` broke its
    fused-Adam build on an H100 image; the runner hands it the plain targets."""
    from testtask.lm.finetune import deepspeed_arch_list

    assert deepspeed_arch_list(given) == read
    for cc in read.split(";"):
        assert all(part.split("+")[0].isdigit() for part in cc.split("."))
