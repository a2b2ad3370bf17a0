"""A model family: its members (one folder of lm-eval samples each) and each member's training compute.

A family (`downstream_predictability.families.<name>`) lists its members (`name`, `samples` folder, `compute` in
FLOPs), or says `members: discover`: every stage folder below `samples_dir` that holds
`<model>-<benchmark>/<task>.jsonl` files, the layout of the training-on-the-test-task runner:

- `base`: the pretrained model, compute 6·N·D;
- `e<k>/<finetune>`: after fine-tuning, 6·N·D + 6·N·(tokens seen in fine-tuning);
- `intermediate/<finetune>/evals/<model>/step_<s>`: a fine-tuning checkpoint after s optimizer steps.

Fine-tuning tokens are the runner's record when it has them; otherwise steps × batch size × context length, an
upper bound (sequences shorter than the context are not padded to it), labelled as such in every output.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omegaconf import OmegaConf

from testtask.context import InputsUnavailable
from testtask.downstream_predictability.settings import Compute, FamilySpec, Finetuning, Members
from testtask.paths import resolve

log = logging.getLogger(__name__)

FINETUNED = re.compile(r"^(?P<stage>e\d+)/(?P<finetune>[^/]+)$")
INTERMEDIATE = re.compile(r"^intermediate/(?P<finetune>[^/]+)/evals/(?P<model>[^/]+)/step_(?P<step>\d+)$")


@dataclass(frozen=True)
class Member:
    name: str
    samples_dir: Path  # holds <model>-<benchmark>/<task>.jsonl
    compute: float  # training FLOPs
    compute_detail: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Family:
    name: str
    label: str
    model: str
    members: list[Member]  # sorted by compute
    notes: list[str] = field(default_factory=list)


def discover_stages(samples_root: Path, model: str) -> list[str]:
    """Stage folders (relative to `samples_root`, '/'-separated) holding `<model>-*/<task>.jsonl` files."""
    stages = {
        jsonl.parent.parent.relative_to(samples_root).as_posix()
        for jsonl in samples_root.rglob("*.jsonl")
        if jsonl.parent.name.startswith(f"{model}-") and jsonl.parent.parent != samples_root
    }
    return sorted(stages)


def task_files(member: Member, model: str) -> dict[str, Path]:
    """Task name (the file's stem) -> samples file of one member; a task logged twice is an error."""
    found: dict[str, Path] = {}
    for jsonl in sorted(member.samples_dir.glob(f"{model}-*/*.jsonl")):
        if jsonl.stem in found:
            raise ValueError(
                f"task {jsonl.stem!r} is logged twice for member {member.name}: {found[jsonl.stem]}, {jsonl}"
            )
        found[jsonl.stem] = jsonl
    return found


def _runner_settings(finetuning: Finetuning) -> dict[str, Any]:
    """batch size, context length and checkpoints folder: explicit keys, else the runner's experiment config."""
    settings: dict[str, Any] = {}
    if finetuning.runner_config:
        path = resolve(finetuning.runner_config)
        if not path.is_file():
            raise FileNotFoundError(f"finetuning.runner_config {path} does not exist")
        runner = OmegaConf.load(path)
        recipe = runner.get("recipe") or {}
        settings = {
            "batch_size": recipe.get("batch_size"),
            "max_length": recipe.get("max_length"),
            "checkpoints_dir": runner.get("checkpoints_dir"),
            "runner_config": finetuning.runner_config,
        }
    for key in ("batch_size", "max_length", "checkpoints_dir"):
        if getattr(finetuning, key) is not None:
            settings[key] = getattr(finetuning, key)
    return settings


def _finetune_steps(
    stage: str, model: str, finetuning: Finetuning, settings: Mapping[str, Any]
) -> tuple[int, str, dict[str, Any]]:
    """Optimizer steps of fine-tuning behind a stage, where the number comes from, and the runner's record."""
    if stage == "base":
        return 0, "base model", {}
    if m := INTERMEDIATE.match(stage):
        return int(m["step"]), "checkpoint folder name", {}
    if m := FINETUNED.match(stage):
        record_path = None
        if settings.get("checkpoints_dir"):
            record_path = resolve(str(settings["checkpoints_dir"])) / m["finetune"] / model / m["stage"]
            record_path = record_path / "finished.json"
        if record_path is not None and record_path.is_file():
            record = json.loads(record_path.read_text())
            if "steps" not in record:
                raise ValueError(f"{record_path}: field `steps` is missing")
            return int(record["steps"]), f"runner record {record_path}", record
        if stage in finetuning.recorded_steps:
            why = "config finetuning.recorded_steps (the runner's record is absent)"
            return finetuning.recorded_steps[stage], why, {}
        raise InputsUnavailable(
            f"stage {stage}: no runner record ({record_path}) and no finetuning.recorded_steps[{stage!r}]"
        )
    raise ValueError(f"stage {stage!r} is not base, e<k>/<finetune> or intermediate/.../step_<s>")


def stage_compute(stage: str, model: str, compute: Compute) -> dict[str, Any]:
    """Training FLOPs of a discovered stage: 6·N·D of pretraining plus 6·N·tokens of fine-tuning."""
    pre = compute.pretraining
    pre_flops = 6.0 * pre.parameters * pre.tokens
    finetuning = compute.finetuning
    detail: dict[str, Any] = {"pretraining_flops": pre_flops, "pretraining_source": pre.source}
    if stage == "base":
        return {**detail, "flops": pre_flops, "finetuning_flops": 0.0, "finetuning_steps": 0}
    if finetuning is None:
        raise ValueError(f"stage {stage}: the family's compute has no finetuning section")
    settings = _runner_settings(finetuning)
    steps, steps_source, record = _finetune_steps(stage, model, finetuning, settings)
    field_name = finetuning.tokens_field
    if record.get(field_name):
        tokens, basis = float(record[field_name]), f"recorded ({field_name})"
    else:
        missing = [k for k in ("batch_size", "max_length") if settings.get(k) is None]
        if missing:
            raise ValueError(f"stage {stage}: finetuning needs {missing} (or a runner_config that has them)")
        tokens = float(steps) * float(settings["batch_size"]) * float(settings["max_length"])
        basis = "upper bound: steps × batch size × max_length (the runner records no token count)"
    ft_flops = 6.0 * finetuning.parameters * tokens
    return {
        **detail,
        "flops": pre_flops + ft_flops,
        "finetuning_flops": ft_flops,
        "finetuning_steps": steps,
        "finetuning_steps_source": steps_source,
        "finetuning_tokens": tokens,
        "finetuning_tokens_basis": basis,
        "batch_size": settings.get("batch_size"),
        "max_length": settings.get("max_length"),
    }


def load_family(name: str, spec: FamilySpec, paper_root: Callable[[str], Path]) -> Family:
    """Members of the family `name` (its entry `spec`), or InputsUnavailable when its samples are not present."""
    root = paper_root(spec.paper) / spec.samples_dir
    if not root.is_dir():
        raise InputsUnavailable(f"family {name}: {root} does not exist")
    model = spec.model
    notes: list[str] = []
    members: list[Member] = []
    if spec.members == Members.discover:  # the schema checked that such a family has `compute`
        for stage in discover_stages(root, model):
            try:
                detail = stage_compute(stage, model, spec.compute)
            except (InputsUnavailable, ValueError) as err:
                notes.append(f"stage {stage} left out: {err}")
                log.warning("family %s: stage %s left out (%s)", name, stage, err)
                continue
            members.append(Member(stage, root / stage, float(detail["flops"]), detail))
    else:
        for entry in spec.members:
            folder = root / entry.samples
            if not folder.is_dir():
                raise InputsUnavailable(f"family {name}, member {entry.name}: {folder} does not exist")
            members.append(
                Member(entry.name, folder, entry.compute, {"flops": entry.compute, "source": "config"})
            )
    if len(members) < 2:
        raise InputsUnavailable(
            f"family {name}: {len(members)} member(s) with samples under {root} (folders <stage>/{model}-<benchmark>/, "
            f"{model} being the family's `model`); a correlation needs 2"
        )
    members.sort(key=lambda m: (m.compute, m.name))
    return Family(name, spec.label, model, members, notes)
