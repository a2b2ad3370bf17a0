"""A tiny random Llama with a word-level tokenizer: an offline stand-in for a Hub model in smoke runs and
tests."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

SPECIAL = {"unk": "<unk>", "bos": "<s>", "eos": "</s>", "pad": "<pad>"}
# The split of the tokenizers library's Whitespace pre-tokenizer, so every word of the texts is in the vocabulary.
WORD = re.compile(r"\w+|[^\w\s]+")


def vocabulary(texts: Iterable[str], special: Iterable[str] | None = None) -> dict[str, int]:
    """Special tokens (default: SPECIAL's) first, then every word of `texts` in order of appearance."""
    vocab = {tok: i for i, tok in enumerate(SPECIAL.values() if special is None else special)}
    for text in texts:
        for word in WORD.findall(text):
            vocab.setdefault(word, len(vocab))
    return vocab


def build_tiny_llama(folder: Path, texts: Iterable[str], max_positions: int = 1024, seed: int = 0) -> Path:
    """Save a random one-layer Llama (hidden size 16) and a tokenizer covering `texts` in `folder`."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = vocabulary(texts)
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIAL["unk"]))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=core,
        unk_token=SPECIAL["unk"],
        bos_token=SPECIAL["bos"],
        eos_token=SPECIAL["eos"],
        pad_token=SPECIAL["pad"],
    )
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        bos_token_id=vocab[SPECIAL["bos"]],
        eos_token_id=vocab[SPECIAL["eos"]],
        pad_token_id=vocab[SPECIAL["pad"]],
    )
    model = LlamaForCausalLM(config)
    with torch.no_grad():  # larger logits than the default init, so the choices' loglikelihoods differ
        model.lm_head.weight.normal_(0.0, 0.5)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
