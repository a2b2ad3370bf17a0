"""One rank of the two-process fine-tuning check (tests/test_distributed.py); run it under torchrun.

    torchrun --standalone --nproc_per_node=2 tests/distributed_worker.py --model DIR --out DIR [--part all]

Each rank fine-tunes the tiny random Llama at `--model` (built on `vocabulary_texts()` by the caller) with
  * `tott`: `finetune` and the training-on-the-test-task recipe (conf/.../recipe.yaml) at a small scale, then
  * `tbt`: `train_epochs`, the train-before-test cell's epoch training (LoRA, one checkpoint per epoch),
and writes `OUT/rank<r>.json`: the Trainer's arguments (per-device batch, accumulation, world size), what each
micro-batch held (the example ids of every row, with the optimizer step it counted towards) and each run's result
(optimizer steps, checkpoints, the epoch a checkpoint's trainer_state records, or the exception that stopped it).
The caller compares the ranks. The recording is a wrapper around `Trainer.training_step`, so it sees exactly what
the Trainer fed the model, whichever collator or sampler built it.

Only plain-string examples and keys every version of the recipe has are used, so the same worker also runs against
the code before 36183a5 (to show the checks fail there). Each part starts without a process group (the previous
part's is torn down): a group left up by an earlier Trainer would hide a world size read before TrainingArguments
exist, as the first Trainer of a real job has none.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from pathlib import Path

# Sizes: with batch_size 8 and per_device 2 on 2 ranks the accumulation must be 2 (8 / (2 × 2)).
BATCH_SIZE = 8
PER_DEVICE = 2
TOTT_EXAMPLES = 32  # 4 optimizer steps of 8 in the epoch
TBT_EXAMPLES = 20  # 10 micro-batches, 5 per rank: 3 optimizer steps per epoch (the last one half)
TBT_EPOCHS = 2
WORDS = ["red", "blue", "green", "stone", "water", "light", "plant", "sun", "moon", "rock", "sea", "sky"]


def tag(i: int) -> str:
    """The word that marks example `i`: one token of the tiny word-level vocabulary, in no other example."""
    return f"ex{i:03d}"


def texts(n: int) -> list[str]:
    """`n` short documents, each carrying its own tag word."""
    return [
        f"{tag(i)} : the {WORDS[i % len(WORDS)]} and the {WORDS[(3 * i + 1) % len(WORDS)]} ."
        for i in range(n)
    ]


def vocabulary_texts() -> list[str]:
    return texts(max(TOTT_EXAMPLES, TBT_EXAMPLES))


def _recipe(path: Path, **overrides):
    """The recipe at `path` at this check's scale: typed (testtask.lm.settings.Recipe) where the code has that
    schema, else the plain dict older code reads."""
    from omegaconf import OmegaConf

    recipe = OmegaConf.to_container(OmegaConf.load(path), resolve=True)
    recipe.update(
        max_steps=None,
        batch_size=BATCH_SIZE,
        per_device_batch_size=PER_DEVICE,
        max_length=32,
        pad_to_max_length=False,
        warmup_steps=0,  # (older code needs an integer here)
        save_steps=[],
        save_every=None,
        logging_steps=1,
        progress=False,
        gradient_checkpointing=False,
        **overrides,
    )
    try:
        from testtask.lm.settings import Recipe
    except ImportError:  # older code: a plain recipe, every key it reads given
        return {"final_lr_fraction": 0.1, "report_to": [], **recipe}
    from testtask.schema import load

    return load(Recipe, recipe, "recipe")


def _lora(**values):
    try:
        from testtask.lm.settings import Lora
    except ImportError:  # older code reads a plain mapping
        return values
    return Lora(**values)


class Recorder:
    """Wraps `Trainer.training_step`: per micro-batch, the run, the optimizer step it belongs to and the ids of
    the examples in it; per run, the Trainer's batch arguments."""

    def __init__(self, tokenizer, n: int):
        self.token_to_example = {tokenizer.convert_tokens_to_ids(tag(i)): i for i in range(n)}
        self.run = ""
        self.batches: list[dict] = []
        self.args: dict[str, dict] = {}

    def ids(self, input_ids) -> list[int]:
        found = []
        for row in input_ids.tolist():
            marks = [self.token_to_example[t] for t in row if t in self.token_to_example]
            found.append(marks[0] if len(marks) == 1 else -1)  # -1: not exactly one example in the row
        return found

    def install(self) -> None:
        import transformers

        original = transformers.Trainer.training_step
        recorder = self

        def training_step(trainer, model, inputs, *args, **kwargs):
            a = trainer.args
            recorder.args[recorder.run] = {
                "per_device_train_batch_size": a.per_device_train_batch_size,
                "gradient_accumulation_steps": a.gradient_accumulation_steps,
                "world_size": a.world_size,
                "max_steps": trainer.state.max_steps,
            }
            recorder.batches.append(
                {
                    "run": recorder.run,
                    "step": trainer.state.global_step,
                    "ids": recorder.ids(inputs["input_ids"]),
                }
            )
            return original(trainer, model, inputs, *args, **kwargs)

        transformers.Trainer.training_step = training_step


def _checkpoint_epochs(folder: Path) -> dict[int, float]:
    """Step -> the `epoch` each checkpoint's trainer_state.json records (1.0 at the end of the first epoch)."""
    out = {}
    for ckpt in sorted(folder.glob("checkpoint-*")):
        state = ckpt / "trainer_state.json"
        if state.is_file():
            out[int(ckpt.name.split("-")[-1])] = json.loads(state.read_text())["epoch"]
    return out


def _run_part(part: str, opts, work: Path, device: str) -> dict:
    from testtask.lm.finetune import finetune
    from testtask.paths import conf_dir
    from testtask.train_before_test.runner.training import train_epochs

    if part == "tott":
        recipe = _recipe(conf_dir() / "training_on_the_test_task" / "finetune" / "recipe.yaml", epochs=1)
        result = finetune(
            opts.model,
            texts(TOTT_EXAMPLES),
            work,
            recipe,
            parameters=1e6,
            learning_rate=1e-3,
            device=device,
            seed=0,
        )
        return {"steps": result.steps, "checkpoints": result.checkpoints}
    recipe = _recipe(conf_dir() / "train_before_test" / "recipe" / "paper.yaml")
    lora = _lora(enabled=True, r=2, alpha=4, dropout=0.0, target_modules="all-linear")
    run = train_epochs(
        opts.model,
        texts(TBT_EXAMPLES),
        work,
        recipe,
        learning_rate=1e-3,
        epochs=TBT_EPOCHS,
        lora=lora,
        device=device,
        seed=0,
    )
    return {
        "steps_per_epoch": run.steps_per_epoch,
        "checkpoints": {str(e): p.name for e, p in run.checkpoints.items()},
    }


def _tear_down_process_group() -> None:
    """Back to the state of a fresh torchrun process: no process group, no accelerate state (the next Trainer
    starts both again), so a world size read before TrainingArguments exist is read as in a real job. The next
    group meets on a new port with its own store: torchrun's store still holds the first group's keys."""
    import socket

    import torch
    from accelerate.state import AcceleratorState

    dist = torch.distributed
    if dist.is_initialized():
        port = [None]
        if dist.get_rank() == 0:
            with socket.socket() as sock:
                sock.bind(("127.0.0.1", 0))
                port = [sock.getsockname()[1]]
        dist.broadcast_object_list(port, src=0)
        dist.barrier()
        dist.destroy_process_group()
        os.environ.update(
            MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port[0]), TORCHELASTIC_USE_AGENT_STORE="False"
        )
    AcceleratorState._reset_state(reset_partial_state=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", default="all", choices=["tott", "tbt", "all"])
    parser.add_argument("--model", required=True)
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--device", default="cpu")
    opts = parser.parse_args(argv)
    os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")

    import torch
    import transformers
    from transformers import AutoTokenizer

    torch.set_num_threads(1)
    transformers.utils.logging.set_verbosity_error()
    rank = int(os.environ.get("RANK", "0"))
    recorder = Recorder(AutoTokenizer.from_pretrained(opts.model), len(vocabulary_texts()))
    recorder.install()
    report: dict = {"rank": rank, "world_size_env": int(os.environ.get("WORLD_SIZE", "1")), "runs": {}}
    for part in ["tott", "tbt"] if opts.part == "all" else [opts.part]:
        _tear_down_process_group()
        work = opts.out / "work" / part
        recorder.run = part
        try:
            report["runs"][part] = _run_part(part, opts, work, opts.device)
        except Exception as err:  # recorded, so the caller can say which check it stopped
            report["runs"][part] = {
                "error": f"{type(err).__name__}: {err}",
                "traceback": traceback.format_exc(),
            }
        if torch.distributed.is_initialized():
            torch.distributed.barrier()  # every checkpoint is written before their states are read
        report["runs"][part]["checkpoint_epochs"] = _checkpoint_epochs(work)
    report["args"] = recorder.args
    report["batches"] = recorder.batches
    opts.out.mkdir(parents=True, exist_ok=True)
    (opts.out / f"rank{rank}.json").write_text(json.dumps(report, indent=1) + "\n")
    _tear_down_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
