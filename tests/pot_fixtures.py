"""Tiny offline models, tokenizers and a synthetic dataset for the pretrain-on-test runner tests.

Everything is built from scratch (no downloads): a word-level tokenizer whose vocabulary is the fixture texts'
words plus the zero-shot prompt's words (the Llama one prepends BOS, as Mistral's does), and randomly initialised
BERT / GPT-2 / Llama models with a hidden size of 16 and one layer, each saved with `save_pretrained` next to its
tokenizer.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

# One synthetic task for the runner tests and the GPU preflight: its classes, words, prompt vocabulary and
# (unbalanced, 150-row) class sizes live in the library (testtask.preflight), the tests build their own tiny models.
from testtask.preflight.data import (  # noqa: F401 - CLASSES, DESCRIPTION, ROWS_PER_CLASS re-exported for the tests
    CLASSES,
    DESCRIPTION,
    PROMPT_TEXT,
    ROWS_PER_CLASS,
    classification_frame,
)
from testtask.preflight.models import word_tokenizer


def fixture_frame(seed: int = 0) -> pd.DataFrame:
    """A 3-class data set whose texts mix class words and common words (columns `text`, `label`)."""
    return classification_frame(seed)


def fixture_spec(path: str = "fixture.csv") -> dict:
    """A `source: file` dataset spec (one entry of conf/datasets/*.yaml) for the fixture CSV."""
    return {"source": "file", "path": path, "classes": list(CLASSES), "description": DESCRIPTION}


def build_tokenizer(texts, *, bert: bool, bos: bool = False):
    """The preflight's word-level tokenizer over `texts` and the zero-shot prompt's words."""
    return word_tokenizer([*texts, PROMPT_TEXT], bert=bert, bos=bos)


def build_model(kind: str, directory: Path, texts) -> Path:
    """Save a tiny random `bert`, `gpt2` or `llama` model with its tokenizer to `directory`."""
    import torch
    from transformers import (
        BertConfig,
        BertForMaskedLM,
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
    )

    torch.manual_seed(0)
    tokenizer = build_tokenizer(texts, bert=kind == "bert", bos=kind == "llama")
    vocab = len(tokenizer)
    if kind == "bert":
        config = BertConfig(
            vocab_size=vocab,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=128,
            pad_token_id=tokenizer.pad_token_id,
        )
        model = BertForMaskedLM(config)
    elif kind == "gpt2":
        config = GPT2Config(
            vocab_size=vocab,
            n_embd=16,
            n_layer=1,
            n_head=2,
            n_positions=256,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
        model = GPT2LMHeadModel(config)
    elif kind == "llama":
        config = LlamaConfig(
            vocab_size=vocab,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=1,
            intermediate_size=32,
            max_position_embeddings=512,
            bos_token_id=tokenizer.bos_token_id,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
        )
        model = LlamaForCausalLM(config)
    else:
        raise ValueError(kind)
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return directory
