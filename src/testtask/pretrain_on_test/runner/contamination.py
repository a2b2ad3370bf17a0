"""§9.2: does a contamination detector tell contamination of unlabeled test text from that of labeled data?

One cell of the §9.1 packing experiment: the model is pretrained on the unlabeled `extra` or `test` texts, scored
on `test`, then given the `test` text-label pairs, in the same order and formatted like the pretraining blocks
(App. G), for the sharded likelihood comparison test of Oren et al. (2024).

Writes `accuracies.csv` (one row) and `contamination.json` in the published layout; the JSON is rewritten after
acc_base and each arm, so a rerun skips what is finished (with other settings it is refused).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from testtask.io import atomic_write_text, to_jsonable
from testtask.lm.hf import pick_device
from testtask.paths import resolve
from testtask.pretrain_on_test.contamination import ShardedTest, run_test
from testtask.pretrain_on_test.runner import subsample as subsampling
from testtask.pretrain_on_test.runner.cell import ResumeError, baseline_columns, identity, make_protocol
from testtask.pretrain_on_test.runner.datasets import load_dataset
from testtask.pretrain_on_test.runner.likelihood import sequence_logliks
from testtask.pretrain_on_test.runner.settings import Settings
from testtask.pretrain_on_test.runner.store import CellStore, cell_dir

log = logging.getLogger("testtask.runner")

ARMS = ("extra", "test")  # pretraining on unlabeled extra (control) or test texts (§9.2)
RESULT = "contamination.json"


def example_strings(prompts: Any, texts: Sequence[str], labels: Sequence[int], fmt: str) -> list[str]:
    """The text-label pairs as the test sees them: `fmt` with {query} (the prompt's text block, cut as in
    pretraining), {answer} (the answer marker) and {label} (the class name)."""
    return [
        fmt.format(query=prompts.query(t), answer=prompts.template.answer, label=prompts.classes[int(y)])
        for t, y in zip(texts, labels, strict=True)
    ]


def _settings(settings: Settings, config: DictConfig) -> dict[str, Any]:
    """What must not change between a run and its resumption, as the composed config `config` writes it."""
    return {
        **identity(settings, config),  # the cell's (cell.yaml)
        "repetition": settings.contamination.repetition,
        # batch_size changes speed only (padded batches score like single sequences), so a resumed run may change it
        "contamination": {
            k: v
            for k, v in OmegaConf.to_container(config.contamination, resolve=True).items()
            if k != "batch_size"
        },
    }


def _load(path: Path, settings: dict[str, Any]) -> dict[str, Any]:
    if not path.exists():
        return {"settings": settings, "arms": {}}
    try:
        before = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ResumeError(f"{path}: not valid JSON ({error}); move it away to rerun the cell") from error
    old, new = before.get("settings") or {}, json.loads(json.dumps(to_jsonable(settings)))
    # Files written before batch_size left the compared settings still resume.
    if isinstance(old.get("contamination"), dict):
        old["contamination"] = {k: v for k, v in old["contamination"].items() if k != "batch_size"}
    if old != new:
        changed = sorted(k for k in new.keys() | old.keys() if old.get(k) != new.get(k))
        raise ResumeError(
            f"{path} was run with a different {changed or 'settings'}; move it away or restore the old settings"
        )
    return before


def _save(path: Path, result: dict[str, Any], seconds: float) -> None:
    """Write `result` with `seconds`: the run's wall time so far, over every (resumed) run of the cell."""
    result["seconds"] = seconds
    atomic_write_text(path, json.dumps(to_jsonable(result), indent=2) + "\n")


def run_contamination(settings: Settings, config: DictConfig) -> Path:
    """Run (or finish) the §9.2 cell; returns its `contamination.json`. `config`: the composed config `settings`
    were read from, which the JSON's settings record."""
    from tqdm.auto import tqdm

    started = time.perf_counter()
    spec = settings.spec
    m, n, seed = settings.m, settings.n, settings.seed
    c = settings.contamination
    lm = settings.lm_for_task()  # zero-shot: the settings' relation for task=contamination
    if not lm.packing:
        log.warning("lm.packing is false: §9.2 runs the §9.1 packing experiment (lm=*_packing)")
    store = CellStore(cell_dir(resolve(settings.results_dir), m, n, lm.lm_type, spec.key))
    path = store.directory / RESULT
    result = _load(path, _settings(settings, config))
    before = float(result.get("seconds", 0.0))  # wall time of earlier, interrupted runs of this cell

    def elapsed() -> float:
        return before + time.perf_counter() - started

    if result.get("complete") and store.done() > 0:
        log.info("%s: finished; nothing to run", path)
        return path
    test = ShardedTest(c.num_shards, c.permutations, c.ddof)

    data = load_dataset(spec, settings.assets_dir)
    labels = data["label"].to_numpy()
    sub = subsampling.draw(
        labels,
        m,
        n,
        seed=seed,
        dataset=spec.key,
        repetition=c.repetition,
        stratification=settings.stratification,
    )
    if result.get("subsample", sub.as_dict()) != sub.as_dict():
        raise ResumeError(f"{path}: the dataset changed since the subsample was drawn; move it away to rerun")
    result["subsample"] = sub.as_dict()
    test_frame = data.iloc[sub.test]
    device = pick_device(settings.device)
    protocol = make_protocol(lm, spec, device, settings.show_step_progress)
    tokenizer = protocol.tokenizer
    examples = example_strings(
        protocol.prompts, list(test_frame["text"]), list(test_frame["label"]), c.example
    )
    # Each example tokenized on its own, special tokens included (Oren et al.: `tokenizer.encode(example)`).
    tokens = [list(tokenizer(e, add_special_tokens=c.add_special_tokens)["input_ids"]) for e in examples]
    result["examples"] = {"count": len(examples), "first": examples[:2], "tokens": sum(map(len, tokens))}

    def score(model: Any, sequences: list[list[int]], arm: str) -> list[float]:
        with tqdm(total=len(sequences), desc=f"contamination test ({arm})", leave=False) as bar:
            return list(
                sequence_logliks(
                    model,
                    sequences,
                    pad_id=int(tokenizer.pad_token_id),
                    device=device,
                    batch_size=c.batch_size,
                    context_len=c.context_len,
                    stride=c.stride,
                    progress=bar,
                )
            )

    if "base" not in result:
        start = time.perf_counter()
        result["base"] = {
            "accuracy": protocol.accuracy(protocol.model, test_frame),
            "seconds": time.perf_counter() - start,
        }
        _save(path, result, elapsed())
    training_seed = subsampling.training_seed(seed, c.repetition)
    bar = tqdm(ARMS, desc=f"§9.2 {lm.lm_type}/{spec.key} n{n}")
    for arm in bar:
        if arm in result["arms"]:
            continue
        texts = list((data.iloc[sub.extra] if arm == "extra" else test_frame)["text"])
        trained, stats = protocol.pretrain(texts, training_seed)
        scorer = protocol.scoring_model(trained)
        start = time.perf_counter()
        accuracy = protocol.accuracy(scorer, test_frame)
        accuracy_seconds = time.perf_counter() - start
        start = time.perf_counter()
        outcome, statistics = run_test(tokens, lambda seqs, s=scorer, a=arm: score(s, seqs, a), test, seed)
        result["arms"][arm] = {
            **outcome.as_dict(),
            "accuracy": accuracy,
            "canonical": statistics.canonical,
            "permuted_mean": statistics.permuted.mean(axis=1),
            "permuted": statistics.permuted,
            "shard_sizes": statistics.sizes,
            "sequences_scored": statistics.sequences_scored,
            "pretrain": stats.as_dict("pretrain"),
            "seconds": {
                "pretrain": stats.seconds,
                "accuracy": accuracy_seconds,
                "test": time.perf_counter() - start,
            },
        }
        protocol.drop_adapters(trained, scorer)
        _save(path, result, elapsed())
        bar.set_postfix(arm=arm, p=f"{outcome.p_value:.3g}", acc=f"{accuracy:.3f}")

    accuracies = {"base": result["base"]["accuracy"], **{a: result["arms"][a]["accuracy"] for a in ARMS}}
    result.update(
        {
            "dataset": spec.key,
            "m": m,
            "n": n,
            "lm_type": lm.lm_type,
            "model": lm.model,
            "device": device,
            "test": {"name": "sharded likelihood comparison test (Oren et al. 2024)", **vars(test)},
            "accuracies": accuracies,
            "boost": accuracies["extra"] - accuracies["base"],
            "bias": accuracies["test"] - accuracies["extra"],
            "p_values": {a: result["arms"][a]["p_value"] for a in ARMS},
            "complete": True,
        }
    )
    if store.done() == 0:  # the cell's one row, beside the usual layout's log
        row = {**accuracies, **baseline_columns(labels, sub.test, spec.num_classes)}
        store.append(0, row, {"seconds": elapsed(), "device": device, "subsample": sub.as_dict()})
    _save(path, result, elapsed())
    log.info(
        "%s: p(extra) = %.3g, p(test) = %.3g, bias = %+.3f",
        path,
        result["p_values"]["extra"],
        result["p_values"]["test"],
        result["bias"],
    )
    return path
