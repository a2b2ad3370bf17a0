"""Throughput of padding vs packing LoRA pretraining on the same prompts (the §9.1 comparison).

Both modes train fresh adapters for one epoch on the same n texts; packing also saves the repeated header, so
texts/s is the like-for-like number. Each mode records the recipe its last trial ran, read from the live objects.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import platform
from pathlib import Path
from typing import Any

import numpy as np
import torch

from testtask.io import atomic_write_text, to_jsonable
from testtask.lm.hf import pick_device
from testtask.paths import resolve
from testtask.pretrain_on_test.runner.datasets import load_dataset
from testtask.pretrain_on_test.runner.settings import Settings, ZeroShotLm
from testtask.pretrain_on_test.runner.training import TrainStats, qlora_record
from testtask.pretrain_on_test.runner.zeroshot import ZeroShot

log = logging.getLogger("testtask.runner")


def measure(settings: Settings) -> dict[str, Any]:
    spec = settings.spec
    data = load_dataset(spec, settings.assets_dir)
    rng = np.random.default_rng(settings.seed)
    texts = list(data["text"].iloc[rng.choice(len(data), size=settings.n, replace=False)])
    device = pick_device(settings.device)
    base_lm = settings.lm_for_task()
    assert isinstance(base_lm, ZeroShotLm)  # the settings' relation: task=packing_speed needs a zero-shot LM
    runs = {}
    protocol = None
    for mode in ("padding", "packing"):
        lm = dataclasses.replace(base_lm, packing=mode == "packing")
        if mode == "packing":  # one pack per step, not cut below the packs' length (lm=mistral_qlora_packing)
            lm = dataclasses.replace(
                lm,
                pretrain=dataclasses.replace(lm.pretrain, batch_size=1),
                max_seq_length=settings.speed.packing_max_seq_length,
            )
        if protocol is None:
            protocol = ZeroShot(lm, spec, device=device, show_progress=settings.show_step_progress)
        protocol.lm = lm
        trials = []
        for repeat in range(settings.speed.repeats):
            model, stats = protocol.pretrain(texts, settings.seed + repeat)
            protocol.drop_adapters(model)
            trials.append(
                {
                    "seconds": stats.seconds,
                    "tokens": stats.tokens,
                    "positions": stats.positions,
                    "tokens_per_second": stats.tokens_per_second,
                    "positions_per_second": stats.positions / stats.seconds,
                    "texts_per_second": len(texts) / stats.seconds,
                    "loss": stats.loss,
                }
            )
        runs[mode] = {
            "batch_size": lm.pretrain.batch_size,
            "sequences": len(protocol.pretraining_features(texts)),
            "trials": trials,
            "tokens_per_second": float(np.median([t["tokens_per_second"] for t in trials])),
            "texts_per_second": float(np.median([t["texts_per_second"] for t in trials])),
            "recipe": ran_recipe(stats),
        }
    return {
        "model": base_lm.model,
        "lm_type": base_lm.lm_type,
        "dataset": spec.key,
        "texts": len(texts),
        "pack_size": base_lm.pack_size,
        "device": device,
        "device_name": torch.cuda.get_device_name()
        if device.startswith("cuda")
        else platform.processor() or "cpu",
        "threads": torch.get_num_threads(),
        "runs": runs,
        "packing_speedup_texts": runs["packing"]["texts_per_second"] / runs["padding"]["texts_per_second"],
    }


def ran_recipe(stats: TrainStats) -> dict[str, Any]:
    """The recipe a trial ran, as the preflight's verify_qlora reads it (from the live objects, not the config)."""
    return {
        **qlora_record(stats.quantization or {}, stats.optimizer or {}, stats.precision),
        "optim": stats.optim,
    }


def run(settings: Settings) -> Path:
    result = measure(settings)
    out = resolve(settings.speed.out) / f"packing-{result['lm_type']}-{result['device']}.json"
    atomic_write_text(out, json.dumps(to_jsonable(result), indent=2) + "\n")
    for mode, r in result["runs"].items():
        recipe = r["recipe"]
        print(
            f"{mode:8s} {r['tokens_per_second']:8.1f} tokens/s  {r['texts_per_second']:6.2f} texts/s  ({r['sequences']} sequences; "
            f"{','.join(map(str, recipe['quant_type'])) or 'unquantized'}, {recipe['precision']}, "
            f"{recipe['optimizer']} with {recipe['optimizer_8bit_states']} 8-bit states)"
        )
    print(f"packing/padding texts/s: {result['packing_speedup_texts']:.2f}x -> {out}")
    return out
