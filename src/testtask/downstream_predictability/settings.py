"""The analysis settings of downstream-predictability, read once from the `downstream_predictability` config
section (conf/downstream_predictability/analysis.yaml and its `families` group, where every default is;
`PAPER.settings` builds them for the pipeline).

A family entry (conf/downstream_predictability/families/*.yaml, or one added on the command line as the simulated
families are) is typed too: `FamilySpec.from_config` names the entry and the key it cannot read. Its optional keys
(`label`, `samples_dir`, `members`, and below `compute.finetuning`) have their defaults there, since a new entry
has no YAML of its own to hold them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from testtask.downstream_predictability.correlations import METHODS

DISCOVER = "discover"


@dataclass(frozen=True)
class Pretraining:
    parameters: float  # N
    tokens: float  # D: compute 6·N·D
    source: str | None  # where N and D come from


@dataclass(frozen=True)
class Finetuning:
    parameters: float  # N of fine-tuning (LoRA still runs forward and backward through all weights)
    runner_config: str | None  # the runner's experiment config: batch_size, max_length, checkpoints_dir
    batch_size: int | None  # explicit values win over the runner config's
    max_length: int | None
    checkpoints_dir: str | None
    tokens_field: str  # field of the runner's finished.json with the tokens seen, if it has one
    recorded_steps: dict[str, int]  # stage -> optimizer steps, when the runner's record is absent


@dataclass(frozen=True)
class Compute:
    pretraining: Pretraining
    finetuning: Finetuning  # all unset (but `parameters`) when the config has none: only `base` can be costed


@dataclass(frozen=True)
class MemberSpec:
    name: str
    samples: str  # folder below the family's samples_dir
    compute: float  # FLOPs


@dataclass(frozen=True)
class FamilySpec:
    name: str
    label: str
    paper: str  # whose results root holds the samples (Context.paper_root)
    samples_dir: str  # folder below that root
    model: str  # model name prefix of the <model>-<benchmark> folders
    members: tuple[MemberSpec, ...] | None  # None: discover every stage folder (compute from `compute`)
    compute: Compute | None  # needed to discover members

    @classmethod
    def from_config(cls, name: str, spec: Mapping[str, Any]) -> FamilySpec:
        where = f"downstream_predictability.families.{name}"
        try:
            members = spec.get("members", DISCOVER)
            compute = spec.get("compute")
            return cls(
                name=str(name),
                label=str(spec.get("label", name)),
                paper=str(spec["paper"]),
                samples_dir=str(spec.get("samples_dir", "samples")),
                model=str(spec["model"]),
                members=None
                if members == DISCOVER
                else tuple(
                    MemberSpec(str(m["name"]), str(m["samples"]), float(m["compute"])) for m in members
                ),
                compute=None if compute is None else _compute(compute),
            )
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"{where}: {type(err).__name__}: {err}") from err


def _optional(value: Any, kind: type) -> Any:
    return None if value is None else kind(value)


def _compute(spec: Mapping[str, Any]) -> Compute:
    pre = spec["pretraining"]
    pretraining = Pretraining(
        float(pre["parameters"]), float(pre["tokens"]), _optional(pre.get("source"), str)
    )
    ft = spec.get("finetuning") or {}
    finetuning = Finetuning(
        parameters=float(ft.get("parameters", pretraining.parameters)),
        runner_config=_optional(ft.get("runner_config"), str),
        batch_size=_optional(ft.get("batch_size"), int),
        max_length=_optional(ft.get("max_length"), int),
        checkpoints_dir=_optional(ft.get("checkpoints_dir"), str),
        tokens_field=str(ft.get("tokens_field", "tokens_seen")),
        recorded_steps={str(k): int(v) for k, v in (ft.get("recorded_steps") or {}).items()},
    )
    return Compute(pretraining, finetuning)


@dataclass(frozen=True)
class Focus:
    task: str | None  # Figures 2 and 3 (a family without it: its first task, alphabetically)
    method: str  # correlation method shown in Figures 2, 3 and 6


@dataclass(frozen=True)
class Schematic:
    label: str
    a: float  # Beta(a, b) stretched onto [-1, 1]
    b: float


@dataclass(frozen=True)
class Figure2:
    quantity: str
    bins: int
    schematic: tuple[Schematic, ...]


@dataclass(frozen=True)
class Figure3:
    quantities: tuple[str, ...]  # panels A-D


@dataclass(frozen=True)
class Figure4:
    quantities: tuple[str, ...]
    ordering: tuple[
        tuple[str, str, str], ...
    ]  # (left, > or >=, right): the paper's ordering of the quantities
    tolerance: float  # statistics this close count as equal


@dataclass(frozen=True)
class Figure5:
    tasks: tuple[str, ...]
    bins: int


@dataclass(frozen=True)
class Figure6:
    tasks: tuple[str, ...]
    incorrect: str  # sum | each
    bins: int


@dataclass(frozen=True)
class Settings:
    families: dict[str, FamilySpec]  # every configured family, by name
    families_used: tuple[str, ...] | None  # None: every family whose samples exist
    tasks: tuple[str, ...]  # restrict to these tasks; empty: every task all members logged
    target_delimiter: str  # stripped from a continuation to get the choice's text
    normalisation: str  # none | chars | bytes
    compute_scale: str  # log10 | linear (Pearson only)
    negate: tuple[str, ...]  # quantities where lower is better, negated before correlating
    undefined: str  # drop | zero
    methods: tuple[str, ...]  # correlation methods computed (an empty list in the config: all)
    grid_points: int  # points of the complementary CDFs in the JSON
    focus: Focus
    figure_2: Figure2
    figure_3: Figure3
    figure_4: Figure4
    figure_5: Figure5
    figure_6: Figure6

    def __post_init__(self) -> None:
        if self.figure_6.incorrect not in ("sum", "each"):
            raise ValueError(
                f"downstream_predictability.figure_6.incorrect must be sum or each, got {self.figure_6.incorrect!r}"
            )
        unknown = sorted(set(self.families_used or ()) - set(self.families))
        if unknown:
            raise ValueError(
                f"families_used names unknown families {unknown}; known: {sorted(self.families)}"
            )

    @classmethod
    def from_config(cls, section: Mapping[str, Any]) -> Settings:
        """Settings of the `downstream_predictability` section; ValueError naming a bad entry."""
        used = section["families_used"]
        focus, fig2, fig3, fig4 = (
            section["focus"],
            section["figure_2"],
            section["figure_3"],
            section["figure_4"],
        )
        fig5, fig6 = section["figure_5"], section["figure_6"]
        return cls(
            families={
                str(k): FamilySpec.from_config(str(k), v) for k, v in (section["families"] or {}).items()
            },
            families_used=None if not used else tuple(str(f) for f in used),
            tasks=tuple(str(t) for t in section["tasks"] or ()),
            target_delimiter=str(section["target_delimiter"]),
            normalisation=str(section["normalisation"]),
            compute_scale=str(section["compute_scale"]),
            negate=tuple(str(q) for q in section["negate"] or ()),
            undefined=str(section["undefined"]),
            methods=tuple(str(m) for m in section["methods"] or ()) or METHODS,
            grid_points=int(section["grid_points"]),
            focus=Focus(_optional(focus["task"], str), str(focus["method"])),
            figure_2=Figure2(
                quantity=str(fig2["quantity"]),
                bins=int(fig2["bins"]),
                schematic=tuple(
                    Schematic(str(s["label"]), float(s["a"]), float(s["b"])) for s in fig2["schematic"]
                ),
            ),
            figure_3=Figure3(tuple(str(q) for q in fig3["quantities"])),
            figure_4=Figure4(
                quantities=tuple(str(q) for q in fig4["quantities"]),
                ordering=tuple((str(a), str(op), str(b)) for a, op, b in fig4["ordering"]),
                tolerance=float(fig4["tolerance"]),
            ),
            figure_5=Figure5(tuple(str(t) for t in fig5["tasks"]), int(fig5["bins"])),
            figure_6=Figure6(tuple(str(t) for t in fig6["tasks"]), str(fig6["incorrect"]), int(fig6["bins"])),
        )
