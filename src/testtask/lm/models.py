"""The registry of language models: load and validate a registry YAML (the shipped one, default_path(), lists the
models of *Training on the test task*: conf/training_on_the_test_task/models/paper.yaml).

The YAML (Appendix B.1 and B.1.1 of that paper, plus `extra` models that have published result files) is the only
place model facts live; this module turns it into `ModelInfo` records and checks it, so a typo in the config fails
loudly at load time rather than silently shifting a model on the compute axis or into the wrong cohort. The
training-on-the-test-task runner loads models with it; analyses of that paper's results (its own, proxy-tasks')
read the facts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from testtask.errors import InputError
from testtask.paths import conf_dir

KINDS = ("base", "instruct", "extra")
LANGUAGES = ("EN", "EN+CN")
_DATE = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")

# Required fields per section; instruct models take N and D from their base model.
_REQUIRED: dict[str, tuple[str, ...]] = {
    "base": ("paper_name", "train_date", "params_b", "tokens_t", "hf_repo", "family", "language"),
    "instruct": ("train_date", "base_model", "hf_repo", "family", "language"),
    "extra": ("train_date", "params_b", "tokens_t", "hf_repo", "family", "language", "source"),
}
# Optional annotations: kept for frame() and with_authors_values(), never needed by analyses.
_OPTIONAL = (
    "paper_name",
    "paper_hf_repo",
    "source",
    "authors_tokens_t",
    "authors_train_date",
    "revision_note",
)
# Optional loading fields (any section): what the runner needs to load the model; see ModelInfo.
_LOADING = ("trust_remote_code", "revision", "model_args", "eval_model_args")
# Git branch names are not pins: the weights behind them change.
_BRANCHES = frozenset({"main", "master", "HEAD"})


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
    # Loading (the runner; analyses never read these). Off unless the entry says so; the authors loaded every
    # model with trust_remote_code=True except falcon (jobs_eval.py:29-31).
    trust_remote_code: bool = False
    revision: str | None = (
        None  # a Hub commit (or tag); None: not pinned (the entry's revision_note says why)
    )
    model_args: dict[str, Any] = field(
        default_factory=dict, hash=False, compare=False
    )  # from_pretrained kwargs
    eval_model_args: dict[str, Any] = field(
        default_factory=dict, hash=False, compare=False
    )  # lm-eval `hf` only

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


def _positive(value: Any, what: str) -> float:
    # bool is an int subclass; `true` in YAML is never a size.
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{what} must be a number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"{what} must be positive, got {value!r}")
    return number


def _loading(entry: Mapping[str, Any], label: str) -> dict[str, Any]:
    """The validated loading fields of one entry (absent ones keep ModelInfo's defaults)."""
    out: dict[str, Any] = {}
    if "trust_remote_code" in entry:
        if not isinstance(entry["trust_remote_code"], bool):
            raise ValueError(
                f"{label}: trust_remote_code must be true or false, got {entry['trust_remote_code']!r}"
            )
        out["trust_remote_code"] = entry["trust_remote_code"]
    revision = entry.get("revision")
    if revision is not None:
        if not isinstance(revision, str) or not revision.strip():
            raise ValueError(f"{label}: revision must be a commit hash or null, got {revision!r}")
        if revision in _BRANCHES:
            raise ValueError(
                f"{label}: revision {revision!r} is a branch, not a pin; write a commit hash, or null with a "
                "revision_note saying why none is pinned"
            )
        out["revision"] = revision
    for key in ("model_args", "eval_model_args"):
        value = entry.get(key)
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise ValueError(f"{label}: {key} must be a mapping of keyword arguments, got {value!r}")
        out[key] = dict(value)
    if "trust_remote_code" in out.get("model_args", {}):
        raise ValueError(f"{label}: set trust_remote_code as its own field, not inside model_args")
    return out


def _as_dict(cfg: Any) -> dict[str, Any]:
    """A plain dict from a DictConfig or mapping (resolving interpolations)."""
    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(cfg, DictConfig):
            cfg = OmegaConf.to_container(cfg, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        pass
    if not isinstance(cfg, Mapping):
        raise ValueError(f"model registry must be a mapping with {'/'.join(KINDS)}, got {type(cfg).__name__}")
    return dict(cfg)


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

    # --- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_config(cls, cfg: Any) -> ModelRegistry:
        """Build and validate from a DictConfig or dict with sections base / instruct / extra."""
        data = _as_dict(cfg)
        unknown_sections = sorted(set(data) - set(KINDS))
        if unknown_sections:
            raise ValueError(
                f"model registry has unknown section(s) {unknown_sections}; expected {list(KINDS)}"
            )
        sections = {kind: dict(data.get(kind) or {}) for kind in KINDS}

        seen: dict[str, str] = {}
        for kind, entries in sections.items():
            for name in entries:
                if name in seen:
                    raise ValueError(f"model {name!r} appears in both {seen[name]!r} and {kind!r}")
                seen[name] = kind

        infos: list[ModelInfo] = []
        notes: dict[str, dict[str, Any]] = {}
        for kind in ("base", "extra"):
            for name, entry in sections[kind].items():
                fields = cls._fields(kind, name, entry)
                infos.append(
                    ModelInfo(
                        name=name,
                        kind=kind,
                        train_date=fields["train_date"],
                        params_b=fields["params_b"],
                        tokens_t=fields["tokens_t"],
                        family=fields["family"],
                        language=fields["language"],
                        hf_repo=fields["hf_repo"],
                        **fields["loading"],
                    )
                )
                notes[name] = fields["notes"]
        bases = {info.name: info for info in infos if info.kind == "base"}
        for name, entry in sections["instruct"].items():
            fields = cls._fields("instruct", name, entry)
            base = bases.get(fields["base_model"])
            if base is None:
                raise ValueError(
                    f"instruct model {name!r}: base_model {fields['base_model']!r} is not a key of 'base'"
                )
            # Instruction tuning adds negligible compute, so N and D are the base model's.
            infos.append(
                ModelInfo(
                    name=name,
                    kind="instruct",
                    train_date=fields["train_date"],
                    params_b=base.params_b,
                    tokens_t=base.tokens_t,
                    family=fields["family"],
                    language=fields["language"],
                    hf_repo=fields["hf_repo"],
                    base_model=base.name,
                    **fields["loading"],
                )
            )
            notes[name] = fields["notes"]
        return cls(infos, notes)

    @staticmethod
    def _fields(kind: str, name: str, entry: Any) -> dict[str, Any]:
        """Validated fields of one entry; every error names the model and the field."""
        label = f"{kind} model {name!r}"
        if not isinstance(entry, Mapping):
            raise ValueError(f"{label}: expected a mapping of fields, got {entry!r}")
        missing = [key for key in _REQUIRED[kind] if key not in entry]
        if missing:
            raise ValueError(f"{label}: missing field(s) {missing}")
        allowed = set(_REQUIRED[kind]) | set(_OPTIONAL) | set(_LOADING)
        if kind != "instruct":
            allowed |= {"params_b", "tokens_t"}
        extra_fields = sorted(set(entry) - allowed)
        if extra_fields:
            raise ValueError(f"{label}: unknown field(s) {extra_fields}")

        out: dict[str, Any] = {"train_date": _check_date(entry["train_date"], f"{label}: train_date")}
        if kind == "instruct":
            out["base_model"] = entry["base_model"]
            if not isinstance(out["base_model"], str):
                raise ValueError(f"{label}: base_model must be a model name, got {out['base_model']!r}")
        else:
            out["params_b"] = _positive(entry["params_b"], f"{label}: params_b")
            out["tokens_t"] = _positive(entry["tokens_t"], f"{label}: tokens_t")
        for key in ("family",):
            if not isinstance(entry[key], str) or not entry[key]:
                raise ValueError(f"{label}: {key} must be a non-empty string, got {entry[key]!r}")
            out[key] = entry[key]
        if entry["language"] not in LANGUAGES:
            raise ValueError(f"{label}: language must be one of {list(LANGUAGES)}, got {entry['language']!r}")
        out["language"] = entry["language"]
        repo = entry["hf_repo"]
        if repo is not None and (not isinstance(repo, str) or "/" not in repo):
            raise ValueError(f"{label}: hf_repo must be 'owner/name' or null, got {repo!r}")
        out["hf_repo"] = repo

        out["loading"] = _loading(entry, label)
        notes = {key: entry[key] for key in _OPTIONAL if key in entry}
        if "authors_tokens_t" in notes:
            notes["authors_tokens_t"] = _positive(notes["authors_tokens_t"], f"{label}: authors_tokens_t")
        if "authors_train_date" in notes:
            _check_date(notes["authors_train_date"], f"{label}: authors_train_date")
        out["notes"] = notes
        return out

    @classmethod
    def load(cls, path: str | Path | None = None) -> ModelRegistry:
        """Read a registry YAML (default: the shipped conf/training_on_the_test_task/models/paper.yaml)."""
        from omegaconf import OmegaConf

        file = Path(path) if path is not None else default_path()
        if not file.is_file():
            raise FileNotFoundError(f"model registry {file} does not exist")
        return cls.from_config(OmegaConf.load(file))

    def with_authors_values(self) -> ModelRegistry:
        """A copy using the D and dates of the authors' analysis code where they differ from the paper.

        The published figures were computed from notebooks/utils.py (model2compute, model2date), whose D differs
        from Appendix B.1 for gemma-2b, olmo-7b, olmo-1.7-7b and yi-6b, and whose pythia dates are 2023-02.
        """
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

    # --- queries ------------------------------------------------------------------------------------------------
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
            row = {
                "name": info.name,
                "kind": info.kind,
                "train_date": info.train_date,
                "params_b": info.params_b,
                "tokens_t": info.tokens_t,
                "family": info.family,
                "language": info.language,
                "hf_repo": info.hf_repo,
                "base_model": info.base_model,
                "trust_remote_code": info.trust_remote_code,
                "revision": info.revision,
            }
            note = self._notes.get(info.name, {})
            row.update({key: note.get(key) for key in _OPTIONAL})
            row["compute"] = info.compute
            row["log10_compute"] = math.log10(info.compute)
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        counts = ", ".join(f"{kind}={len(self.names(kind))}" for kind in KINDS)
        return f"ModelRegistry({counts})"


# --- own models (conf/user/models.yaml, see testtask.user_files) -----------------------------------------------


def user_entries(file: Any) -> dict[str, dict[str, Any]]:
    """The sections of an own models file (a `testtask.user_files.UserFile`), each entry checked with the
    registry's own field rules; errors name the file and `<section>.<model>`."""
    unknown = sorted(set(file.data) - set(KINDS))
    if unknown:
        raise file.error(unknown[0], f"unknown section (sections: {', '.join(KINDS)})")
    sections: dict[str, dict[str, Any]] = {}
    for kind in KINDS:
        entries = file.data.get(kind) or {}
        if not isinstance(entries, Mapping):
            raise file.error(kind, f"expected a mapping of model name -> fields, got {entries!r}")
        for name, entry in entries.items():
            try:
                ModelRegistry._fields(kind, str(name), entry)
            except ValueError as err:
                label = f"{kind} model {str(name)!r}: "
                raise file.error(f"{kind}.{name}", str(err).removeprefix(label)) from None
        sections[kind] = {str(name): dict(entry) for name, entry in entries.items()}
    return sections


def merge_user_models(models: Any, file: Any) -> None:
    """Merge an own models file over the registry config `models` (base / instruct / extra), in place: an own
    entry adds a model, or replaces the paper's entry of the same name and section whole (never field by
    field, so an own entry always states every required field). The merged registry is built once here, so an
    instruct model whose base_model is unknown fails naming the file."""
    sections = user_entries(file)
    for kind, entries in sections.items():
        for name, entry in entries.items():
            other = next((k for k in KINDS if k != kind and name in (models.get(k) or {})), None)
            if other is not None:
                raise file.error(f"{kind}.{name}", f"the paper's registry has this model in {other!r}")
            if models.get(kind) is None:
                models[kind] = {}
            models[kind][name] = entry
    try:
        ModelRegistry.from_config(models)
    except ValueError as err:
        raise file.error("registry", str(err)) from None


def merge_user_models_into_analysis(cfg: Any, file: Any) -> None:
    """`testtask` config: own models join `training_on_the_test_task.models` (proxy-tasks reads it too)."""
    merge_user_models(cfg.training_on_the_test_task.models, file)


def merge_user_models_into_runner(cfg: Any, file: Any) -> None:
    """The training-on-the-test-task runner's config: own models join `models`."""
    merge_user_models(cfg.models, file)
