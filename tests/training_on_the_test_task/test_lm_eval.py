"""Our lm-eval tasks and the evaluation module of `training-on-the-test-task`, offline on tiny fixtures.

A one-layer random Llama is evaluated with lm-eval on JSON Lines copies of ARC, HellaSwag, MMLU and MMLU-Pro
(tests/fixtures/lm_eval_data.py): prompts, targets and choices are checked on the task objects and on the logged
samples, the Brier score is recomputed by hand from the logged loglikelihoods, and the output files are read
back with the analysis loader.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import offline_single_thread
from tests.fixtures.lm_eval_data import MMLU_SUBJECT, build_model, mmlu_pro_rows, write_datasets

pytest.importorskip("lm_eval")

from testtask.lm import evaluation as ev  # noqa: E402
from testtask.lm.lm_eval_tasks import utils as task_utils  # noqa: E402
from testtask.lm.results import ENTRIES_MEAN, load_results  # noqa: E402

OURS = (
    "arc_challenge_mc",
    "hellaswag_mc",
    "mmlu_cloze",
    "mmlu_mc",
    "leaderboard_mmlu_pro_four",
    "leaderboard_mmlu_pro_four_seeded",
)
PRO_FOUR = ("leaderboard_mmlu_pro_four", "leaderboard_mmlu_pro_four_seeded")
SUBJECT_CLOZE = f"mmlu_{MMLU_SUBJECT}_cloze"
SUBJECT_MC = f"mmlu_{MMLU_SUBJECT}_mc"
FEWSHOT = {"arc_challenge_mc": 3, "hellaswag_mc": 2}  # the fixtures' train splits are smaller than 25 / 10


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module", autouse=True)
def _quiet_single_thread():
    """One torch thread (the CPUs are shared), offline hubs, no progress bars."""
    with offline_single_thread():
        yield


@pytest.fixture(scope="module")
def data(tmp_path_factory) -> dict[str, Path]:
    return write_datasets(tmp_path_factory.mktemp("tott_data"))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("tott_datasets_cache")


@pytest.fixture(scope="module")
def tiny_model(data, tmp_path_factory) -> Path:
    return build_model(tmp_path_factory.mktemp("tott_model") / "tiny-llama", data["arc_challenge_mc"].parent)


@pytest.fixture(scope="module")
def local(data) -> dict[str, Path]:
    """Benchmark -> local data, for the benchmarks the run below evaluates."""
    return {
        "arc_challenge_mc": data["arc_challenge_mc"],
        "hellaswag_mc": data["hellaswag_mc"],
        SUBJECT_CLOZE: data["mmlu_cloze"],
        SUBJECT_MC: data["mmlu_mc"],
        "leaderboard_mmlu_pro_four": data["leaderboard_mmlu_pro_four"],
        "leaderboard_mmlu_pro_four_seeded": data["leaderboard_mmlu_pro_four_seeded"],
    }


@pytest.fixture(scope="module")
def tasks(local, cache_dir) -> dict:
    """Our task objects (lm-eval `Task`s) reading the fixtures."""
    manager = ev.task_manager(local, cache_dir, include_defaults=False)
    return manager.load(list(local))["tasks"]


@pytest.fixture(scope="module")
def run(tiny_model, local, cache_dir, tmp_path_factory) -> dict:
    """One `evaluate` call over every benchmark of `local`; the results folder and the files written."""
    results = tmp_path_factory.mktemp("tott_results")
    paths = ev.evaluate(
        str(tiny_model),
        list(local),
        results,
        num_fewshot=FEWSHOT,
        device="cpu",
        local_data=local,
        dataset_cache_dir=cache_dir,
    )
    return {"results": results, "paths": paths, "model": tiny_model.name, "tiny_model": str(tiny_model)}


def _samples(run: dict, benchmark: str, task: str | None = None) -> list[dict]:
    folder = ev.samples_dir(run["results"], "base", run["model"], benchmark)
    lines = (folder / f"{task or benchmark}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def _output(run: dict, benchmark: str) -> dict:
    return json.loads(run["paths"][benchmark].read_text())


# --------------------------------------------------------------------------- registry


def test_include_path_registers_our_tasks_without_shadowing_lm_evals(capsys):
    """`testtask action=lm-tasks` (TaskManager with lm-eval's tasks and our include_path) lists ours and only
    ours; `lm_tasks.include_defaults=false` indexes our folder alone and finds the same names."""
    from testtask.pipeline import compose, run

    listed = run(compose(["action=lm-tasks"]))
    names = capsys.readouterr().out.split()
    assert names == listed
    assert run(compose(["action=lm-tasks", "lm_tasks.include_defaults=false"])) == listed
    for name in OURS:
        assert name in names
    assert len([n for n in names if n.endswith("_cloze") and n.startswith("mmlu_")]) == 57 + 5
    assert len([n for n in names if n.endswith("_mc") and n.startswith("mmlu_")]) == 57 + 5
    assert "mmlu" not in names and "hellaswag" not in names  # lm-eval's own, not redefined


def test_groups_cover_the_57_mmlu_subjects_of_lm_eval():
    manager = ev.task_manager(include_defaults=False)
    for variant in ("cloze", "mc"):
        leaves = ev.leaf_tasks(manager, f"mmlu_{variant}")
        assert len(leaves) == len(set(leaves)) == 57
        assert all(name.startswith("mmlu_") and name.endswith(f"_{variant}") for name in leaves)
        assert f"mmlu_{MMLU_SUBJECT}_{variant}" in leaves


def test_yaml_fewshot_counts_are_leaderboard_v1(tasks):
    """The YAMLs carry the Open LLM Leaderboard v1 counts, and every task keeps its Hub dataset path."""
    from lm_eval.tasks._yaml_loader import load_yaml

    expected = {"arc_challenge_mc": 25, "hellaswag_mc": 10, SUBJECT_CLOZE: 5, SUBJECT_MC: 5}
    expected.update(dict.fromkeys(PRO_FOUR, 5))
    manager = ev.task_manager(include_defaults=False)
    hub = {
        "arc_challenge_mc": "allenai/ai2_arc",
        "hellaswag_mc": "Rowan/hellaswag",
        SUBJECT_CLOZE: "cais/mmlu",
        SUBJECT_MC: "cais/mmlu",
        "leaderboard_mmlu_pro_four": "ricdomolm/mmlu_pro_4",  # the authors' fixed subsample
        "leaderboard_mmlu_pro_four_seeded": "TIGER-Lab/MMLU-Pro",
    }
    for name, shots in expected.items():
        cfg = load_yaml(manager.task_index[name].yaml_path, resolve_func=False)
        assert cfg["num_fewshot"] == shots
        assert cfg["dataset_path"] == hub[name]
        assert tasks[name].config.num_fewshot == shots
        assert tasks[name].config.dataset_path == "json"  # the local override


# --------------------------------------------------------------------------- prompts and targets


def _check_lettered(task, doc, options: list[str], gold_text: str) -> None:
    prompt = task.doc_to_text(doc)
    lines = prompt.split("\n")
    assert lines[-1] == "Answer:"
    assert lines[-5:-1] == [f"{letter}. {text}" for letter, text in zip("ABCD", options, strict=True)]
    choices = task.doc_to_choice(doc)
    assert choices == ["A", "B", "C", "D"]
    target = task.doc_to_target(doc)
    index = target if isinstance(target, int) else choices.index(target)
    assert options[index] == gold_text


def test_arc_mc_prompts_letter_the_options_and_target_the_right_letter(tasks, data):
    task = tasks["arc_challenge_mc"]
    raw = [json.loads(line) for line in (data["arc_challenge_mc"] / "ARC-Challenge" / "test.jsonl").open()]
    four = [r for r in raw if len(r["choices"]["text"]) == 4]
    docs = list(task.eval_docs)
    assert len(raw) == 5 and len(docs) == len(four) == 4  # the five-option question is left out
    assert any(r["choices"]["label"][0] == "1" for r in four)  # numeric answer keys are handled
    for doc, row in zip(docs, four, strict=True):
        gold = row["choices"]["text"][row["choices"]["label"].index(row["answerKey"])]
        _check_lettered(task, doc, row["choices"]["text"], gold)
        assert task.doc_to_text(doc).startswith(row["question"] + "\nA. ")


def test_hellaswag_mc_prompts_use_lm_evals_cleanup(tasks, data):
    task = tasks["hellaswag_mc"]
    raw = [json.loads(line) for line in (data["hellaswag_mc"] / "validation.jsonl").open()]
    docs = list(task.eval_docs)
    assert len(docs) == len(raw)
    for doc, row in zip(docs, raw, strict=True):
        endings = [task_utils.hellaswag_clean(e).strip() for e in row["endings"]]
        _check_lettered(task, doc, endings, endings[int(row["label"])])
        assert "[" not in task.doc_to_text(doc)
    from lm_eval.tasks.hellaswag.utils import preprocess

    texts = [row["ctx_a"] for row in raw] + [e for row in raw for e in row["endings"]]
    assert [task_utils.hellaswag_clean(t) for t in texts] == [preprocess(t) for t in texts]
    first = task.doc_to_text(docs[0])
    assert first.startswith(f"{raw[0]['activity_label']}: ") and ". " in first  # " [title]" became ". "


def test_mmlu_cloze_scores_the_option_texts(tasks, data):
    task = tasks[SUBJECT_CLOZE]
    raw = [json.loads(line) for line in (data["mmlu_cloze"] / MMLU_SUBJECT / "test.jsonl").open()]
    for doc, row in zip(task.eval_docs, raw, strict=True):
        assert task.doc_to_choice(doc) == row["choices"]
        assert task.doc_to_target(doc) == row["answer"]
        prompt = task.doc_to_text(doc)
        assert prompt == f"Question: {row['question']}\nAnswer:"
        assert not any(f"\n{letter}. " in prompt for letter in "ABCD")
    # the authors' fork words the description as MMLU's, "multiple choice" included
    subject = MMLU_SUBJECT.replace("_", " ")
    assert (
        task.config.description
        == f"The following are multiple choice questions (with answers) about {subject}.\n\n"
    )


def test_mmlu_mc_is_lm_evals_mmlu_prompt(tasks, data):
    task = tasks[SUBJECT_MC]
    raw = [json.loads(line) for line in (data["mmlu_mc"] / MMLU_SUBJECT / "test.jsonl").open()]
    for doc, row in zip(task.eval_docs, raw, strict=True):
        _check_lettered(task, doc, row["choices"], row["choices"][row["answer"]])


def test_mmlu_pro_four_is_the_authors_fixed_subsample_as_stored(tasks, data, cache_dir):
    """`leaderboard_mmlu_pro_four` reads the four options as stored (ricdomolm/mmlu_pro_4); the seeded variant
    is evaluated under that name when `task_variants` asks for it."""
    task = tasks["leaderboard_mmlu_pro_four"]
    raw = [json.loads(line) for line in (data["leaderboard_mmlu_pro_four"] / "test.jsonl").open()]
    for doc, row in zip(task.eval_docs, raw, strict=True):
        _check_lettered(task, doc, row["options"], row["options"][row["answer_index"]])
    manager = ev.task_manager(
        {"leaderboard_mmlu_pro_four": data["leaderboard_mmlu_pro_four_seeded"]},
        cache_dir,
        include_defaults=False,
        variants={"leaderboard_mmlu_pro_four": "leaderboard_mmlu_pro_four_seeded"},
    )
    seeded = manager.load(["leaderboard_mmlu_pro_four"])["tasks"]["leaderboard_mmlu_pro_four"]
    assert [len(d["options"]) for d in seeded.eval_docs] == [4] * 4  # drawn from 10 (and 7) options


def test_mmlu_pro_four_seeded_keeps_the_answer_and_three_options(tasks, data):
    task = tasks["leaderboard_mmlu_pro_four_seeded"]
    raw = [json.loads(line) for line in (data["leaderboard_mmlu_pro_four_seeded"] / "test.jsonl").open()]
    docs = list(task.eval_docs)
    assert len(docs) == len(raw)
    assert {len(r["options"]) for r in raw} == {10, 7}
    for doc, row in zip(docs, raw, strict=True):
        kept = doc["options"]
        assert len(kept) == 4
        assert [o for o in row["options"] if o in kept] == kept  # original order
        _check_lettered(task, doc, kept, row["options"][row["answer_index"]])
        assert doc["answer"] == string.ascii_uppercase[doc["answer_index"]]
    # the draw is fixed: per question id, independent of which questions are evaluated
    again = [task_utils.four_option_indices(10, r["answer_index"], str(r["question_id"])) for r in raw[:3]]
    assert again == [
        task_utils.four_option_indices(10, r["answer_index"], str(r["question_id"])) for r in raw[:3]
    ]
    assert len({tuple(x) for x in again}) > 1
    draws = [tuple(task_utils.four_option_indices(10, 0, str(k))) for k in range(200)]
    assert all(d[0] == 0 and len(d) == 4 for d in draws)
    counts = np.bincount([i for d in draws for i in d[1:]], minlength=10)
    assert counts[0] == 0 and counts[1:].min() > 30  # every wrong option can be kept
    assert task_utils.four_option_indices(3, 1, "q") == [0, 1, 2]
    rows = mmlu_pro_rows(1)
    assert task_utils._mmlu_pro_four_doc(rows[0])["answer"] in "ABCD"


# --------------------------------------------------------------------------- the Brier score


def test_brier_score_formula():
    assert task_utils.brier_score([0.0, 0.0, 0.0, 0.0], 2) == pytest.approx(3 * 0.0625 + 0.75**2)
    assert task_utils.brier_score([0.0, -1e9, -1e9, -1e9], 0) == pytest.approx(0.0)
    assert task_utils.brier_score([-1e9, 0.0, -1e9, -1e9], 0) == pytest.approx(2.0)
    lls = np.log([0.1, 0.2, 0.3, 0.4]) - 7.0  # softmax is shift-invariant
    assert task_utils.brier_score(lls, 3) == pytest.approx(0.01 + 0.04 + 0.09 + 0.36)


@pytest.mark.parametrize("benchmark", ["arc_challenge_mc", "hellaswag_mc", SUBJECT_CLOZE, SUBJECT_MC])
def test_brier_and_accuracy_match_a_hand_computation_from_logged_samples(run, benchmark):
    samples = _samples(run, benchmark)
    entry = _output(run, benchmark)["results"][benchmark]
    assert len(samples) == entry["sample_len"] > 0
    briers, hits = [], []
    for sample in samples:
        lls = np.array([resp[0] for resp in sample["filtered_resps"]], dtype=float)
        gold = int(sample["target"])
        p = np.exp(lls - lls.max())
        p /= p.sum()
        briers.append(float(np.sum((p - np.eye(len(p))[gold]) ** 2)))
        hits.append(float(np.argmax(lls) == gold))
        assert sample["brier_score"] == pytest.approx(briers[-1])
    if "acc_norm,none" in entry:  # cloze: loglikelihood per character of the answer text
        norm = [
            float(
                np.argmax(
                    [r[0] / len(c) for r, c in zip(s["filtered_resps"], s["doc"]["choices"], strict=True)]
                )
                == int(s["target"])
            )
            for s in samples
        ]
        assert entry["acc_norm,none"] == pytest.approx(np.mean(norm))
    assert entry["brier_score,none"] == pytest.approx(np.mean(briers))
    assert entry["acc,none"] == pytest.approx(np.mean(hits))
    assert entry["brier_score_stderr,none"] == pytest.approx(np.std(briers, ddof=1) / np.sqrt(len(briers)))
    assert 0.0 < entry["brier_score,none"] < 2.0
    assert _output(run, benchmark)["higher_is_better"][benchmark]["brier_score"] is False


def test_logged_requests_score_letters_for_mc_and_texts_for_cloze(run, data):
    for sample in _samples(run, "arc_challenge_mc"):
        continuations = [arg["arg_1"] for arg in sample["arguments"].values()]
        assert continuations == [" A", " B", " C", " D"]
        context = sample["arguments"]["gen_args_0"]["arg_0"]
        assert context.endswith(sample["doc"]["question"] + "\n" + _lettered(sample["doc"]["options"]))
        assert context.count("Answer:") == FEWSHOT["arc_challenge_mc"] + 1
        # the few-shot examples come from the validation split (the authors' fork), not from train
        shots = context.split("\n\n")[:-1]
        validation = {
            r["question"]
            for r in map(json.loads, (data["arc_challenge_mc"] / "ARC-Challenge" / "validation.jsonl").open())
        }
        assert shots and all(shot.split("\nA. ")[0] in validation for shot in shots)
    for sample in _samples(run, SUBJECT_CLOZE):
        continuations = [arg["arg_1"] for arg in sample["arguments"].values()]
        assert continuations == [" " + text for text in sample["doc"]["choices"]]
        assert sample["arguments"]["gen_args_0"]["arg_0"].count("Answer:") == 6  # 5-shot


def _lettered(options: list[str]) -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in zip("ABCD", options, strict=False)) + "\nAnswer:"


# --------------------------------------------------------------------------- output files


def test_output_json_is_lm_evals_and_loads_with_the_analysis_loader(run):
    out = _output(run, "arc_challenge_mc")
    for key in ("results", "configs", "versions", "n-shot", "higher_is_better", "n-samples", "config"):
        assert key in out
    assert out["n-shot"]["arc_challenge_mc"] == FEWSHOT["arc_challenge_mc"]
    assert _output(run, SUBJECT_CLOZE)["n-shot"][SUBJECT_CLOZE] == 5
    assert out["config"]["model"] == "hf" and out["config"]["model_args"].startswith("pretrained=")
    assert out["task_hashes"]["arc_challenge_mc"]
    evaluations = run["results"] / "evaluations"
    assert sorted(p.name for p in (evaluations / "base").iterdir()) == sorted(
        f"{run['model']}-{b}.json" for b in run["paths"]
    )
    table = load_results(evaluations)
    assert set(table["benchmark"]) == set(run["paths"])
    assert set(table["adjustment"]) == {"base"} and set(table["model"]) == {run["model"]}
    for benchmark in run["paths"]:
        entry = _output(run, benchmark)["results"][benchmark]
        rows = table[table["benchmark"] == benchmark].set_index("metric")
        assert rows.loc["acc,none", "value"] == pytest.approx(entry["acc,none"])
        if benchmark not in PRO_FOUR:
            assert rows.loc["brier_score,none", "value"] == pytest.approx(entry["brier_score,none"])
    cloze = table[table["benchmark"] == SUBJECT_CLOZE]["metric"]
    assert set(cloze) == {"acc,none", "acc_norm,none", "brier_score,none"}


def test_existing_results_are_skipped(run, local, monkeypatch):
    """A second call with the same model and settings finds every file and returns without loading a model."""
    import lm_eval

    before = {b: p.stat().st_mtime_ns for b, p in run["paths"].items()}

    def fail(*args, **kwargs):
        raise AssertionError("evaluated although the result exists")

    monkeypatch.setattr(lm_eval, "simple_evaluate", fail)
    monkeypatch.setattr("lm_eval.api.registry.get_model", fail)
    same = {"model_name": run["model"], "num_fewshot": FEWSHOT, "local_data": local}
    again = ev.evaluate(run["tiny_model"], list(local), run["results"], **same)
    assert again == run["paths"]
    assert {b: p.stat().st_mtime_ns for b, p in again.items()} == before
    with pytest.raises(AssertionError, match="evaluated although"):
        ev.evaluate(
            "x/tiny-llama", ["arc_challenge_mc"], run["results"], model_name=run["model"], overwrite=True
        )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"model": "other/tiny-llama"}, "model_args"),  # another model under the same name
        ({"num_fewshot": 0}, "num_fewshot"),
        ({"model_fingerprint": "retrained/final"}, "model_fingerprint"),  # a fine-tuned folder trained again
        ({"model_args": {"add_bos_token": True}}, "model_args"),  # another protocol (BOS)
        ({"limit": 3}, "limit"),
    ],
)
def test_a_result_made_otherwise_is_refused_not_reused(run, local, monkeypatch, change, field):
    """Resuming must not reuse a file from another model or protocol (found re-running the CPU mini-replication:
    results of the previous protocol were skipped as done)."""
    monkeypatch.setattr("lm_eval.api.registry.get_model", lambda *a, **k: pytest.fail("loaded a model"))
    kwargs = {"model_name": run["model"], "num_fewshot": FEWSHOT, "local_data": local, **change}
    model = kwargs.pop("model", run["tiny_model"])
    with pytest.raises(ev.StaleResultError, match=f"{field}: file .*this run"):
        ev.evaluate(model, ["arc_challenge_mc"], run["results"], **kwargs)


def test_a_result_without_provenance_is_refused(run, tmp_path):
    path = run["paths"]["arc_challenge_mc"]
    old = json.loads(path.read_text())
    old.pop(ev.PROVENANCE_KEY)
    copy = ev.result_path(tmp_path, "base", run["model"], "arc_challenge_mc")
    copy.parent.mkdir(parents=True)
    copy.write_text(json.dumps(old))
    with pytest.raises(ev.StaleResultError, match="has no field 'testtask_provenance'"):
        ev.evaluate(
            run["tiny_model"], ["arc_challenge_mc"], tmp_path, model_name=run["model"], num_fewshot=FEWSHOT
        )


def test_result_paths_follow_the_loader_layout(tmp_path):
    from testtask.lm.results import ResultsError

    path = ev.result_path(tmp_path, "e3/mmluaux", "pythia-70m", "mmlu_cloze")
    assert path == tmp_path / "evaluations" / "e3" / "mmluaux" / "pythia-70m-mmlu_cloze.json"
    assert ev.result_path(tmp_path, "new_evals/base", "m", "leaderboard_mmlu_pro_four").parent.name == "base"
    with pytest.raises(ResultsError):
        ev.result_path(tmp_path, "e3", "m", "mmlu_cloze")  # e3 needs a fine-tuning folder
    with pytest.raises(ValueError, match="may not contain"):
        ev.result_path(tmp_path, "base", "m", "mmlu-cloze")
    assert ev.default_model_name("EleutherAI/pythia-70m") == "pythia-70m"
    assert ev.default_model_name("/models/base/llama-7b/") == "llama-7b"


# --------------------------------------------------------------------------- local data


def test_local_data_from_save_to_disk_and_missing_splits(data, cache_dir, tmp_path):
    import datasets
    from lm_eval.tasks import TaskManager

    rows = [json.loads(line) for line in (data["hellaswag_mc"] / "validation.jsonl").open()]
    train = [json.loads(line) for line in (data["hellaswag_mc"] / "train.jsonl").open()]
    saved = tmp_path / "hellaswag_saved"
    datasets.DatasetDict(
        {"validation": datasets.Dataset.from_list(rows), "train": datasets.Dataset.from_list(train)}
    ).save_to_disk(saved)
    config = ev.task_config("hellaswag_mc", saved, cache_dir)
    assert config["dataset_path"] == "arrow" and config["task"] == "hellaswag_mc"
    assert set(config["dataset_kwargs"]["data_files"]) == {"train", "validation"}
    task = TaskManager(include_defaults=False).load([config])["tasks"]["hellaswag_mc"]
    assert [d["gold"] for d in task.eval_docs] == [int(r["label"]) for r in rows]
    with pytest.raises(FileNotFoundError, match="lacks split"):
        ev.task_config("arc_challenge_mc", data["hellaswag_mc"])
    with pytest.raises(KeyError):
        ev.task_config("mmlu_cloze", data["mmlu_cloze"])  # a group: use task_manager(local_data=...)


# --------------------------------------------------------------------------- the whole MMLU groups


@pytest.fixture(scope="module")
def all_subjects(tmp_path_factory) -> dict[str, Path]:
    """Fixture data for the 57 subjects lm-eval's `mmlu` has."""
    from testtask.lm.lm_eval_tasks._generate_mmlu_configs import lm_eval_subjects

    subjects = tuple(sorted(lm_eval_subjects()))
    assert len(subjects) == 57
    return write_datasets(tmp_path_factory.mktemp("tott_mmlu57"), mmlu_subjects=subjects)


@pytest.mark.parametrize("variant", ["cloze", "mc"])
def test_mmlu_groups_over_57_subjects_load_with_entries_mean(
    variant, all_subjects, tiny_model, cache_dir, tmp_path
):
    group = f"mmlu_{variant}"
    paths = ev.evaluate(
        str(tiny_model),
        [group],
        tmp_path / "results",
        stage="e3/mmluaux",
        local_data={group: all_subjects[group]},
        dataset_cache_dir=cache_dir,
        limit=1,
        device="cpu",
    )
    out = json.loads(paths[group].read_text())
    categories = ("stem", "other", "social_sciences", "humanities")
    assert len(out["results"]) == 1 + 4 + 57
    assert set(out["group_subtasks"][group]) == {f"mmlu_{c}_{variant}" for c in categories}
    assert sum(len(out["group_subtasks"][f"mmlu_{c}_{variant}"]) for c in categories) == 57
    samples = ev.samples_dir(tmp_path / "results", "e3/mmluaux", tiny_model.name, group)
    assert len(list(samples.glob("*.jsonl"))) == 57
    table = load_results(tmp_path / "results" / "evaluations")
    own = table[~table["metric"].str.contains("|", regex=False)].set_index("metric")["value"]
    assert own["brier_score,none"] == pytest.approx(out["results"][group]["brier_score,none"])
    subject_briers = [out["results"][t]["brier_score,none"] for t in out["configs"]]
    assert own["brier_score,none"] == pytest.approx(np.mean(subject_briers))  # one document per subject
    means = set(table["metric"]) - set(own.index)
    assert {f"acc,none|{ENTRIES_MEAN}", f"brier_score,none|{ENTRIES_MEAN}"} <= means
    assert set(table["adjustment"]) == {"e3"} and set(table["finetune"]) == {"mmluaux"}
