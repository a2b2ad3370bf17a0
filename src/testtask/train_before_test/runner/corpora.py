"""The documents of a perplexity corpus (§3.3, App. B.2): one split of a dataset, one text column, filtered.

The source is named in config (`benchmarks.<corpus>.source`: Hugging Face `path`, `name`, `split`, `text`
column, `where` filter). `local_data.<corpus>` replaces the Hub with a local copy: a `datasets.save_to_disk`
folder (a Dataset, or a DatasetDict holding `source.split`), or a `.jsonl` / `.json` / `.parquet` / `.txt` file or
a folder of `<split>.<ext>` files. The result has a single column, `text`, the column our corpus tasks score.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from testtask.train_before_test.runner.benchmarks import CorpusSource, SpecError, filters

if TYPE_CHECKING:
    from datasets import Dataset

_BUILDERS = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".txt": "text", ".csv": "csv"}


def _from_files(path: Path, split: str, cache_dir: Path | None) -> Dataset:
    from datasets import load_dataset

    if path.is_dir():
        found = [path / f"{split}{ext}" for ext in _BUILDERS if (path / f"{split}{ext}").is_file()]
        if not found:
            raise FileNotFoundError(
                f"{path}: no save_to_disk copy and no {split}.<jsonl|json|parquet|txt|csv> file"
            )
        path = found[0]
    builder = _BUILDERS.get(path.suffix)
    if builder is None:
        raise FileNotFoundError(f"{path}: not a dataset file ({sorted(_BUILDERS)})")
    cache = None if cache_dir is None else str(cache_dir)
    return load_dataset(builder, data_files={split: str(path)}, split=split, cache_dir=cache)


def _local(path: Path, split: str, cache_dir: Path | None) -> Dataset:
    from datasets import DatasetDict, load_from_disk

    if (path / "dataset_dict.json").is_file() or (path / "dataset_info.json").is_file():
        data = load_from_disk(str(path))
        if isinstance(data, DatasetDict):
            if split not in data:
                raise SpecError(f"{path}: no split {split!r} (splits: {sorted(data)})")
            return data[split]
        return data
    return _from_files(path, split, cache_dir)


def load_corpus(
    name: str, source: CorpusSource, local: Path | None = None, cache_dir: Path | None = None
) -> Dataset:
    """The corpus's documents as a Dataset with one column, `text` (filtered by `source.where`)."""
    if local is not None:
        data = _local(Path(local), source.split, cache_dir)
    elif source.path is None:
        raise SpecError(
            f"benchmark {name!r}: no corpus source. The authors' 2025 corpora are not released; name one with "
            f"benchmarks.{name}.source.path (a Hugging Face dataset id; .name, .split, .text, .where as needed) "
            f"or give a local copy with local_data.{name}=<folder or file>"
        )
    else:
        from datasets import load_dataset

        cache = None if cache_dir is None else str(cache_dir)
        data = load_dataset(source.path, source.name, split=source.split, cache_dir=cache)
    where = filters(source)
    missing = [c for c in [source.text, *where] if c not in data.column_names]
    if missing:
        raise SpecError(
            f"benchmark {name!r}: the corpus has no column(s) {missing} (columns: {data.column_names})"
        )
    for column, allowed in where.items():
        keep = set(allowed)
        data = data.filter(lambda value, keep=keep: value in keep, input_columns=[column])
    data = data.select_columns([source.text])
    if source.text != "text":
        data = data.rename_column(source.text, "text")
    if len(data) == 0:
        raise SpecError(f"benchmark {name!r}: the corpus source holds no documents (after `where`)")
    return data
