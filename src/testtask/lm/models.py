"""The registry of language models, checked at load time: conf/training_on_the_test_task/models/paper.yaml
(Appendix B.1 and B.1.1 of *Training on the test task*, plus `extra` models with published results) is the
only place model facts live, so a typo fails loudly rather than shifting a model on the compute axis.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import annotated_types as at
from pydantic import Strict, StringConstraints

from testtask.errors import InputError
from testtask.lm.settings import Kwargs
from testtask.paths import conf_dir
from testtask.schema import (
    AnyText,
    Choice,
    Flag,
    Name,
    PositiveNumber,
    Problem,
    Text,
    load,
    record_field,
    require,
    section,
    violations,
)

if TYPE_CHECKING:
    import pandas as pd


class Kind(Choice):
    """A section of the registry: the models of Appendix B.1 (`base`), their instruction-tuned versions (Appendix
    B.1.1, `instruct`) and models with published results outside the appendix (`extra`)."""

    base = "base"
    instruct = "instruct"
    extra = "extra"


KINDS = tuple(Kind)


class Language(Choice):
    """Appendix D.2's split of the pretraining data (and the authors' cn_families)."""

    EN = "EN"
    EN_CN = "EN+CN"


_DATE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")
Month = Annotated[str, Strict(), StringConstraints(pattern=_DATE.pattern), Text("a 'YYYY-MM' month (quoted)")]
HfRepo = Annotated[
    Annotated[str, Strict(), StringConstraints(pattern=r"^[^/\s]+/[^/\s]+$")] | None,
    Text("'owner/name' on the Hub, or null"),
]
# Git branch names are not pins: the weights behind them change.
_BRANCHES = frozenset({"main", "master", "HEAD"})
# The optional annotations of an entry, kept for frame(), note() and with_authors_values(); never needed by analyses.
NOTES = ("paper_name", "paper_hf_repo", "source", "authors_tokens_t", "authors_train_date", "revision_note")


def _required() -> Any:
    """A ModelEntry field that a section's entries must state (else ModelEntry's default stays)."""
    return field(kw_only=False)


@section
class ModelEntry:
    """The fields of every registry entry (paper.yaml, conf/user/models.yaml); an absent one means its
    default."""

    train_date: Month
    hf_repo: HfRepo  # the repository the evaluated weights came from
    family: Name  # the cluster of the clustered standard errors (the authors' model2family)
    language: Language
    # Annotations (never read by an analysis, except authors_* with model_values=authors)
    paper_name: Name | None = record_field()  # the name figures and tables show
    paper_hf_repo: AnyText | None = record_field()  # the paper's string where it is a typo
    source: AnyText | None = record_field()  # where the results of a model outside Appendix B.1 come from
    authors_tokens_t: PositiveNumber | None = record_field()  # D of the authors' analysis code, if it differs
    authors_train_date: Month | None = record_field()  # the train date of the authors' analysis code
    revision_note: AnyText | None = record_field()  # why `revision` is null
    # Loading (the runner): off unless the entry says so (the authors: on but for falcon, jobs_eval.py:29-31)
    trust_remote_code: Flag = record_field(False)
    revision: Annotated[str, Strict(), at.MinLen(1)] | None = record_field()  # a Hub commit; null: not pinned
    model_args: Kwargs = record_field({})  # from_pretrained keyword arguments (training and lm-eval's `hf`)
    eval_model_args: Kwargs = record_field({})  # lm-eval `hf` model arguments only (e.g. parallelize)

    def __post_init__(self) -> None:
        require(
            Problem(
                "revision",
                self.revision,
                "a commit hash or null (a branch is not a pin; null with a revision_note saying why none is pinned)",
            )
            if self.revision in _BRANCHES
            else None,
            Problem(
                "model_args",
                self.model_args,
                "keyword arguments without trust_remote_code (set it as the entry's own field)",
            )
            if "trust_remote_code" in self.model_args
            else None,
        )


@section
class BaseModelEntry(ModelEntry):
    """A model of Appendix B.1: N = params_b (billions of parameters), D = tokens_t (trillions of tokens)."""

    paper_name: Name = _required()
    params_b: PositiveNumber
    tokens_t: PositiveNumber


@section
class InstructModelEntry(ModelEntry):
    """An instruction-tuned model (Appendix B.1.1): N and D are its base model's (instruction tuning adds
    negligible compute)."""

    base_model: Name  # a key of `base`


@section
class ExtraModelEntry(ModelEntry):
    """A model with published results that is not in Appendix B.1."""

    params_b: PositiveNumber
    tokens_t: PositiveNumber
    source: AnyText = _required()


ENTRIES: dict[Kind, type[ModelEntry]] = {
    Kind.base: BaseModelEntry,
    Kind.instruct: InstructModelEntry,
    Kind.extra: ExtraModelEntry,
}


@section
class Models:
    """The model registry (`models` of the analysis section and the runner's config): name -> entry, per
    section."""

    base: dict[str, BaseModelEntry]
    instruct: dict[str, InstructModelEntry]
    extra: dict[str, ExtraModelEntry]
    # The models only a user file added (model -> that file): a source without their results lacks them.
    own: dict[str, Name] = record_field({})

    def __post_init__(self) -> None:
        require(self.relations())

    def relations(self) -> list[Problem]:
        """A name in two sections; an instruct model's base not in `base`; an own model in no section."""
        problems: list[Problem] = []
        seen: dict[str, Kind] = {}
        for kind in Kind:
            for name in self.section(kind):
                if name in seen:
                    problems.append(
                        Problem(
                            f"{kind}.{name}", name, f"a name in one section only (also in {{{seen[name]}}})"
                        )
                    )
                seen.setdefault(name, kind)
        for name, entry in self.instruct.items():
            if entry.base_model not in self.base:
                problems.append(Problem(f"instruct.{name}.base_model", entry.base_model, "a model of {base}"))
        for name in self.own:
            if name not in seen:
                problems.append(Problem(f"own.{name}", name, "a model of {base}, {instruct} or {extra}"))
        return problems

    def section(self, kind: Kind | str) -> dict[str, ModelEntry]:
        """The entries of section `kind`."""
        return getattr(self, str(Kind(kind)))


def default_path() -> Path:
    """The shipped registry: <repo>/conf/training_on_the_test_task/models/paper.yaml."""
    return conf_dir() / "training_on_the_test_task" / "models" / "paper.yaml"


@dataclass(frozen=True)
class ModelInfo:
    """One model: N = params_b (billions of parameters), D = tokens_t (trillions of pretraining tokens)."""

    name: str
    kind: str  # "base" | "instruct" | "extra"
    train_date: str  # "YYYY-MM"
    params_b: float
    tokens_t: float
    family: str
    language: str  # "EN" | "EN+CN"
    hf_repo: str | None
    base_model: str | None = None
    # Loading (the runner; analyses never read these), as the entry's fields
    trust_remote_code: bool = False
    # a Hub commit (or tag); None: not pinned (the entry's revision_note says why)
    revision: str | None = None
    # from_pretrained kwargs, and lm-eval `hf` model arguments only
    model_args: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    eval_model_args: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    def load_kwargs(self) -> dict[str, Any]:
        """from_pretrained keyword arguments besides trust_remote_code: `revision` when pinned, `model_args`."""
        return {**({"revision": self.revision} if self.revision else {}), **self.model_args}

    @property
    def compute(self) -> float:
        """Pretraining FLOPs C = 6·N·D with N in parameters and D in tokens (6·N_b·D_t·1e21)."""
        return 6.0 * (self.params_b * 1e9) * (self.tokens_t * 1e12)

    def is_newer(self, cutoff: str) -> bool:
        """True when trained in or after the `cutoff` month ("YYYY-MM"); the paper's cohort rule."""
        _check_date(cutoff, "cutoff")
        # Zero-padded YYYY-MM strings order like the months they name.
        return self.train_date >= cutoff


class UnknownModel(InputError, KeyError):
    """A model name the registry does not know; the message names the file that mentions it, when given."""

    def __init__(self, name: str, source: str | Path | None = None) -> None:
        self.name = name
        self.source = None if source is None else str(source)
        where = f" (named by {self.source})" if self.source else ""
        super().__init__(
            f"unknown model {name!r}{where}: add it to {default_path()}, or as your own to conf/user/models.yaml "
            "(docs/extending.md)"
        )

    def __str__(self) -> str:
        # KeyError's str() would wrap the message in quotes.
        return str(self.args[0])


def _check_date(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _DATE.match(value):
        raise ValueError(f"{what} must be a 'YYYY-MM' string, got {value!r}")
    return value


def _info(
    name: str, kind: Kind, entry: ModelEntry, params_b: float, tokens_t: float, base_model: str | None = None
) -> ModelInfo:
    return ModelInfo(
        name=name,
        kind=str(kind),
        train_date=entry.train_date,
        params_b=float(params_b),
        tokens_t=float(tokens_t),
        family=entry.family,
        language=str(entry.language),
        hf_repo=entry.hf_repo,
        base_model=base_model,
        trust_remote_code=entry.trust_remote_code,
        revision=entry.revision,
        model_args=dict(entry.model_args),
        eval_model_args=dict(entry.eval_model_args),
    )


def _notes(entry: ModelEntry) -> dict[str, Any]:
    """The annotations an entry states (absent ones left out, as note() then gives its default)."""
    return {key: getattr(entry, key) for key in NOTES if getattr(entry, key) is not None}


class ModelRegistry:
    """The models of the paper, keyed by the name used in the published result files."""

    def __init__(
        self, models: Iterable[ModelInfo], notes: Mapping[str, Mapping[str, Any]] | None = None
    ) -> None:
        self._models: dict[str, ModelInfo] = {}
        for info in models:
            if info.name in self._models:
                raise ValueError(f"model {info.name!r} appears twice in the registry")
            self._models[info.name] = info
        self._notes = {name: dict(values) for name, values in (notes or {}).items()}

    @classmethod
    def from_config(cls, cfg: Any, prefix: str = "models") -> ModelRegistry:
        """Build from a registry config, checked against `Models` (ConfigError naming every bad key)."""
        return cls.from_models(load(Models, cfg, prefix))

    @classmethod
    def from_models(cls, models: Models) -> ModelRegistry:
        """Build from the typed registry (instruct models take N and D from their base model)."""
        infos: list[ModelInfo] = []
        notes: dict[str, dict[str, Any]] = {}
        for kind in (Kind.base, Kind.extra):
            for name, entry in models.section(kind).items():
                infos.append(_info(name, kind, entry, entry.params_b, entry.tokens_t))
                notes[name] = _notes(entry)
        bases = {info.name: info for info in infos if info.kind == Kind.base}
        for name, entry in models.instruct.items():
            base = bases[entry.base_model]
            # Instruction tuning adds negligible compute, so N and D are the base model's.
            infos.append(
                _info(name, Kind.instruct, entry, base.params_b, base.tokens_t, base_model=base.name)
            )
            notes[name] = _notes(entry)
        return cls(infos, notes)

    @classmethod
    def load(cls, path: str | Path | None = None) -> ModelRegistry:
        """Read a registry YAML (default: the shipped conf/training_on_the_test_task/models/paper.yaml)."""
        from omegaconf import OmegaConf

        file = Path(path) if path is not None else default_path()
        if not file.is_file():
            raise FileNotFoundError(f"model registry {file} does not exist")
        return cls.from_config(OmegaConf.load(file))

    def with_authors_values(self) -> ModelRegistry:
        """A copy with the D and dates of the authors' analysis code, notebooks/utils.py (model2compute,
        model2date), which made the published figures: D differs from Appendix B.1 for gemma-2b, olmo-7b,
        olmo-1.7-7b and yi-6b, and its pythia dates are 2023-02."""
        infos = []
        for info in self._models.values():
            note = self._notes.get(info.name, {})
            tokens = note.get("authors_tokens_t", info.tokens_t)
            date = note.get("authors_train_date", info.train_date)
            infos.append(replace(info, tokens_t=tokens, train_date=date))
        # Instruct models inherit D, so follow any change of their base model.
        by_name = {info.name: info for info in infos}
        infos = [
            replace(info, tokens_t=by_name[info.base_model].tokens_t) if info.base_model else info
            for info in infos
        ]
        return ModelRegistry(infos, self._notes)

    def without(self, names: Iterable[str]) -> ModelRegistry:
        """A copy without the models `names`."""
        drop = set(names)
        kept = [info for name, info in self._models.items() if name not in drop]
        return ModelRegistry(kept, {name: notes for name, notes in self._notes.items() if name not in drop})

    def get(self, name: str, source: str | Path | None = None) -> ModelInfo:
        """The model called `name`; UnknownModel (naming `source`, e.g. the result file) when there is none."""
        try:
            return self._models[name]
        except KeyError:
            raise UnknownModel(name, source) from None

    def __contains__(self, name: object) -> bool:
        return name in self._models

    def __len__(self) -> int:
        return len(self._models)

    def __iter__(self):
        return iter(self._models.values())

    def names(self, kind: str | None = None) -> list[str]:
        """Model names in registry order, optionally only those of one section."""
        if kind is not None and kind not in KINDS:
            raise ValueError(f"kind must be one of {list(KINDS)} or None, got {kind!r}")
        return [name for name, info in self._models.items() if kind is None or info.kind == kind]

    def note(self, name: str, field: str, default: Any = None) -> Any:
        """An optional annotation of a model (paper_name, paper_hf_repo, source, authors_tokens_t, ...)."""
        self.get(name)
        return self._notes.get(name, {}).get(field, default)

    def frame(self) -> pd.DataFrame:
        """One row per model: every ModelInfo field, the optional annotations, compute and log10_compute."""
        rows = []
        for info in self._models.values():
            row = {k: v for k, v in asdict(info).items() if k not in ("model_args", "eval_model_args")}
            note = self._notes.get(info.name, {})
            row.update({key: note.get(key) for key in NOTES})
            row["compute"] = info.compute
            row["log10_compute"] = math.log10(info.compute)
            rows.append(row)
        import pandas as pd  # only here: reading the registry to check a config must stay light

        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        counts = ", ".join(f"{kind}={len(self.names(kind))}" for kind in KINDS)
        return f"ModelRegistry({counts})"


def _user_error(file: Any, lines: Iterable[str]) -> Exception:
    from testtask.user_files import UserFileError

    return UserFileError("\n".join(f"{file.shown}: {line}" for line in lines))


def user_entries(file: Any) -> dict[str, dict[str, Any]]:
    """The sections of an own models file (a `UserFile`), every entry checked against its section's schema."""
    lines = [
        f"{key}: unknown section; the sections are {', '.join(KINDS)}"
        for key in file.data
        if key not in KINDS
    ]
    sections: dict[str, dict[str, Any]] = {}
    for kind in Kind:
        entries = file.data.get(kind) or {}
        if not isinstance(entries, Mapping):
            lines.append(f"{kind} = {entries!r}: expected a mapping of model name -> fields")
            continue
        for name, entry in entries.items():
            lines += violations(ENTRIES[kind], entry, f"{kind}.{name}")[1]
        sections[str(kind)] = {str(name): dict(entry) for name, entry in entries.items()}
    if lines:
        raise _user_error(file, lines)
    return sections


def merge_user_models(models: Any, file: Any) -> None:
    """Merge an own models file over the registry config `models`, in place, and check the result: an own
    entry adds a model (recorded in `own`) or replaces the paper's entry of that name whole, never field by
    field."""
    sections = user_entries(file)
    own = dict(models.get("own") or {})
    for kind, entries in sections.items():
        for name, entry in entries.items():
            other = next((k for k in KINDS if k != kind and name in (models.get(k) or {})), None)
            if other is not None:
                raise _user_error(file, [f"{kind}.{name}: the paper's registry has this model in {other!r}"])
            if models.get(kind) is None:
                models[kind] = {}
            if name not in models[kind] or name in own:  # `in own`: merged before (applying twice is a no-op)
                own[name] = file.shown
            models[kind][name] = entry
    models["own"] = own
    lines = violations(Models, models)[1]
    if lines:
        raise _user_error(file, lines)


def merge_user_models_into_analysis(cfg: Any, file: Any) -> None:
    """`testtask` config: own models join `training_on_the_test_task.models` (proxy-tasks reads it too)."""
    merge_user_models(cfg.training_on_the_test_task.models, file)


def merge_user_models_into_runner(cfg: Any, file: Any) -> None:
    """The training-on-the-test-task runner's config: own models join `models`."""
    merge_user_models(cfg.models, file)
