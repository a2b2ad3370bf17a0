"""Two processes (`torchrun --nproc_per_node=2`, CPU, gloo) fine-tune the tiny random Llama with the
training-on-the-test-task recipe (`finetune`) and with the train-before-test epoch training (`train_epochs`).

tests/distributed_worker.py records, in each rank, the Trainer's batch arguments and the example ids of every
micro-batch with the optimizer step it counted towards. The recipe asks for an effective batch of 8 with 2 examples
per device: on 2 ranks that is 2 steps of accumulation. Checked here: the Trainer's per-device batch ×
accumulation × world size is the recipe's batch, each optimizer step consumes exactly that many distinct examples
split disjointly across the ranks and each epoch covers the data once, the number of optimizer steps is the one
the data size implies, and `train_epochs`' steps per epoch (its checkpoint steps) are the Trainer's epoch ends.
Before 36183a5 the accumulation was computed with a world size of 1 (torch.distributed is not up before
TrainingArguments exist), so every step took 16 examples, and `train_epochs` expected checkpoints the Trainer never
wrote. One torchrun launch (each part starts without a process group); about 20 s on two idle cores, 60-80 s on
cores busy with other jobs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import torch

import testtask
from tests import distributed_worker as worker

WORKER = Path(worker.__file__).resolve()
RANKS = 2

if not (torch.distributed.is_available() and torch.distributed.is_gloo_available()):
    pytest.skip("torch.distributed with the gloo backend is not available", allow_module_level=True)


@pytest.fixture(scope="module")
def ranks(tmp_path_factory) -> list[dict]:
    from testtask.lm.tiny_llama import build_tiny_llama

    root = tmp_path_factory.mktemp("distributed")
    model = build_tiny_llama(root / "model", worker.vocabulary_texts(), max_positions=64)
    env = dict(os.environ)
    src = str(Path(testtask.__file__).resolve().parents[1])  # the ranks import the testtask this test imports
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    env.update(OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    out = root / "out"
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={RANKS}"]
    command += [str(WORKER), "--model", str(model), "--out", str(out)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    files = [out / f"rank{r}.json" for r in range(RANKS)]
    if done.returncode or not all(f.is_file() for f in files):
        pytest.fail(f"torchrun exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}")
    return [json.loads(f.read_text()) for f in files]


def _run(ranks: list[dict], name: str) -> list[dict]:
    runs = [r["runs"][name] for r in ranks]
    for rank, run in enumerate(runs):
        assert "error" not in run, f"rank {rank}, {name}: {run['error']}\n{run.get('traceback', '')}"
    return runs


def _steps(ranks: list[dict], name: str) -> dict[int, list[list[int]]]:
    """Optimizer step -> per rank, the example ids it consumed for that step."""
    steps: dict[int, list[list[int]]] = {}
    for rank, report in enumerate(ranks):
        for batch in report["batches"]:
            if batch["run"] == name:
                assert -1 not in batch["ids"], f"rank {rank}: a row without exactly one example tag"
                steps.setdefault(batch["step"], [[] for _ in ranks])[rank] += batch["ids"]
    return steps


@pytest.mark.parametrize("name", ["tott", "tbt"])
def test_effective_batch_is_the_recipes(ranks, name):
    """per-device batch × accumulation × world size == the recipe's batch (8), in every rank's Trainer."""
    for report in ranks:
        assert report["world_size_env"] == RANKS
        args = report["args"][name]
        assert args["world_size"] == RANKS
        effective = args["per_device_train_batch_size"] * args["gradient_accumulation_steps"] * RANKS
        assert effective == worker.BATCH_SIZE, (
            f"{name}: {args['per_device_train_batch_size']} per device × {args['gradient_accumulation_steps']} "
            f"accumulation × {RANKS} ranks = {effective}, the recipe says {worker.BATCH_SIZE}"
        )


def test_tott_steps_and_data(ranks):
    """32 examples, batch 8, one epoch: 4 optimizer steps, each on 8 distinct examples split 4/4 between the ranks
    (no example on both), together every example exactly once."""
    runs = _run(ranks, "tott")
    expected = worker.TOTT_EXAMPLES // worker.BATCH_SIZE
    assert [r["steps"] for r in runs] == [expected] * RANKS, "optimizer steps for 32 examples at batch 8"
    steps = _steps(ranks, "tott")
    assert sorted(steps) == list(range(expected))
    for step, per_rank in steps.items():
        assert not set(per_rank[0]) & set(per_rank[1]), f"step {step}: ranks share examples {per_rank}"
        consumed = [i for ids in per_rank for i in ids]
        assert len(consumed) == len(set(consumed)) == worker.BATCH_SIZE, (
            f"step {step} consumed {len(consumed)} examples ({per_rank}), the recipe's batch is {worker.BATCH_SIZE}"
        )
    seen = Counter(i for per_rank in steps.values() for ids in per_rank for i in ids)
    assert seen == Counter(range(worker.TOTT_EXAMPLES)), "one epoch covers every example once"


def test_tbt_epoch_checkpoints_and_data(ranks):
    """20 examples, batch 8: 10 micro-batches of 2, 5 per rank, accumulation 2 → 3 optimizer steps per epoch (the
    last one on 4 examples). train_epochs' steps per epoch must be the Trainer's: its checkpoints at steps 3 and 6
    record epochs 1.0 and 2.0, and each epoch's steps cover every example once, disjointly across ranks."""
    runs = _run(ranks, "tbt")
    per_epoch = -(-worker.TBT_EXAMPLES // (worker.PER_DEVICE * RANKS * 2))  # ceil(5 batches / 2 accumulation)
    assert per_epoch == 3
    for run in runs:
        assert run["steps_per_epoch"] == per_epoch
        assert run["checkpoints"] == {str(e): f"checkpoint-{e * per_epoch}" for e in (1, 2)}
    epochs = ranks[0]["runs"]["tbt"]["checkpoint_epochs"]
    assert epochs == {str(e * per_epoch): float(e) for e in (1, 2)}, "checkpoints at the epoch ends"
    steps = _steps(ranks, "tbt")
    assert sorted(steps) == list(range(worker.TBT_EPOCHS * per_epoch))
    for epoch in range(worker.TBT_EPOCHS):
        window = range(epoch * per_epoch, (epoch + 1) * per_epoch)
        for step in window:
            assert not set(steps[step][0]) & set(steps[step][1]), f"step {step}: ranks share examples"
        seen = Counter(i for s in window for ids in steps[s] for i in ids)
        assert seen == Counter(range(worker.TBT_EXAMPLES)), f"epoch {epoch + 1} covers every example once"


def test_a_rank_leaves_its_process_group_before_it_ends(tmp_path):
    """The ranks' entry points destroy their process group before exiting (PyTorch asks every rank to; one left
    alive at exit can abort the rank); leaving twice, or without having joined, does nothing."""
    import torch.distributed as dist

    from testtask.lm.finetune import leave_process_group

    leave_process_group()  # never joined: nothing to do
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1)
    assert dist.is_initialized()
    leave_process_group()
    assert not dist.is_initialized()
    leave_process_group()
