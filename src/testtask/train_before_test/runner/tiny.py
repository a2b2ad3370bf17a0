"""An offline fixture for the `tiny` preset and the runner's tests: a benchmark, its lm-eval task, a tiny model.

`tbt_tiny` is a multiple-choice task: "what follows <word> ?" with four word choices, the gold one being the
word after <word> in a fixed cyclic list, so a model can learn it from the training split. It is saved with
`datasets.save_to_disk` (train 40, validation 12, test 24 documents) next to its lm-eval YAML. `tiny_corpus` is a
perplexity corpus of 30 short documents over the same words (one `text` column, one `train` split), which the
runner cuts 8:1:1 like the paper's 2025 corpora. The model is a randomly initialised one-layer Llama (hidden
size 16) with a word-level tokenizer covering the fixture's words.

testtask action=tiny-data paper=train-before-test   (writes it to train_before_test.tiny_data.out)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from testtask.lm.tiny_llama import build_tiny_llama

WORDS = (
    "red blue green stone water light plant sun moon rock heat cold river cloud seed leaf sand wind rain salt"
).split()
SIZES = {"train": 40, "validation": 12, "test": 24}
CORPUS_DOCUMENTS = 30
TASK = "tbt_tiny"
TASK_YAML = f"""task: {TASK}
dataset_path: arrow            # the runner points it at the local copy (local_data)
output_type: multiple_choice
training_split: train
validation_split: validation
test_split: test
doc_to_text: "Question : what follows {{{{cue}}}} ?\\nAnswer :"
doc_to_target: label
doc_to_choice: choices
metric_list:
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: acc_norm
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""


def documents(split: str, count: int) -> list[dict]:
    """Deterministic documents: the cue cycles through WORDS, the gold position through 0..3."""
    offset = {"train": 0, "validation": 7, "test": 3}[split]
    rows = []
    for i in range(count):
        k = (i * 3 + offset) % len(WORDS)
        gold = WORDS[(k + 1) % len(WORDS)]
        distractors = [WORDS[(k + 5 + 4 * j) % len(WORDS)] for j in range(3)]
        label = (i + offset) % 4
        choices = distractors[:label] + [gold] + distractors[label:]
        rows.append({"cue": WORDS[k], "choices": choices, "label": label})
    return rows


def write_data(folder: Path) -> Path:
    from datasets import Dataset, DatasetDict

    splits = {name: Dataset.from_list(documents(name, n)) for name, n in SIZES.items()}
    DatasetDict(splits).save_to_disk(str(folder))
    return folder


def corpus_documents(count: int = CORPUS_DOCUMENTS) -> list[str]:
    """Deterministic documents of 6 to 20 words: runs of the cyclic word list (so training can lower their
    bits per byte), each sentence closed by a full stop."""
    docs = []
    for i in range(count):
        start, length = (i * 7) % len(WORDS), 6 + (i * 5) % 15
        words = [WORDS[(start + j) % len(WORDS)] for j in range(length)]
        docs.append(" ".join(words[:5]) + " . " + " ".join(words[5:]) + " .")
    return docs


def write_corpus(folder: Path) -> Path:
    from datasets import Dataset, DatasetDict

    DatasetDict({"train": Dataset.from_dict({"text": corpus_documents()})}).save_to_disk(str(folder))
    return folder


def write_task(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{TASK}.yaml"
    path.write_text(TASK_YAML)
    return path


def build_model(folder: Path, words: Sequence[str] = WORDS) -> Path:
    """A random one-layer Llama and a word-level tokenizer over `words` and the prompt's words."""
    return build_tiny_llama(folder, [*words, "Question : what follows ? Answer : ."], max_positions=128)


def build(root: Path) -> dict[str, Path]:
    """Write the fixture below `root`: data/tbt_tiny/, data/tiny_corpus/, tasks/tbt_tiny.yaml, model/."""
    root = Path(root)
    return {
        "data": write_data(root / "data" / TASK),
        "corpus": write_corpus(root / "data" / "tiny_corpus"),
        "tasks": write_task(root / "tasks").parent,
        "model": build_model(root / "model"),
    }
