"""Tiny random models with word-level tokenizers, saved with `save_pretrained` (no Hub access).

The QLoRA and fine-tuning checks use a small Llama (`SMALL`, grouped-query attention as Mistral's) so that
bitsandbytes' NF4 blocks and 8-bit optimizer states (tensors of >= 4096 elements) see realistic shapes."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

SPECIAL = {
    "pad": "[PAD]",
    "unk": "[UNK]",
    "cls": "[CLS]",
    "sep": "[SEP]",
    "mask": "[MASK]",
    "bos": "<s>",
    "eos": "</s>",
}


@dataclass(frozen=True)
class Size:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int
    positions: int


TINY = Size(hidden=32, layers=1, heads=2, kv_heads=2, intermediate=64, positions=512)
SMALL = Size(hidden=256, layers=2, heads=4, kv_heads=2, intermediate=512, positions=2048)


def word_tokenizer(texts: Iterable[str], *, bert: bool = False, bos: bool = False):
    """A word-level fast tokenizer over `texts`; `bert` adds [CLS]/[SEP], `bos` prepends <s> (as Mistral's)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    from testtask.lm.tiny_llama import vocabulary

    vocab = vocabulary(texts, SPECIAL.values())
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token=SPECIAL["unk"]))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    kwargs = {
        "unk_token": SPECIAL["unk"],
        "bos_token": SPECIAL["bos"],
        "eos_token": SPECIAL["eos"],
        "pad_token": SPECIAL["pad"],
    }
    if bert:
        cls, sep = SPECIAL["cls"], SPECIAL["sep"]
        core.post_processor = processors.TemplateProcessing(
            single=f"{cls} $A {sep}",
            pair=f"{cls} $A {sep} $B {sep}",
            special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])],
        )
        kwargs.update(cls_token=cls, sep_token=sep, mask_token=SPECIAL["mask"])
    elif bos:
        core.post_processor = processors.TemplateProcessing(
            single=f"{SPECIAL['bos']} $A",
            pair=f"{SPECIAL['bos']} $A $B",
            special_tokens=[(SPECIAL["bos"], vocab[SPECIAL["bos"]])],
        )
    return PreTrainedTokenizerFast(tokenizer_object=core, **kwargs)


def build(kind: str, folder: Path, texts: Iterable[str], size: Size = TINY, seed: int = 0) -> Path:
    """Save a random `bert` (masked LM), `gpt2` or `llama` (causal LM) and its tokenizer to `folder`."""
    import torch
    from transformers import (
        BertConfig,
        BertForMaskedLM,
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
    )

    tokenizer = word_tokenizer(texts, bert=kind == "bert", bos=kind == "llama")
    ids = {
        "pad_token_id": tokenizer.pad_token_id,
        "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    torch.manual_seed(seed)
    if kind == "bert":
        config = BertConfig(
            vocab_size=len(tokenizer),
            hidden_size=size.hidden,
            num_hidden_layers=size.layers,
            num_attention_heads=size.heads,
            intermediate_size=size.intermediate,
            max_position_embeddings=size.positions,
            pad_token_id=tokenizer.pad_token_id,
        )
        model = BertForMaskedLM(config)
    elif kind == "gpt2":
        config = GPT2Config(
            vocab_size=len(tokenizer),
            n_embd=size.hidden,
            n_layer=size.layers,
            n_head=size.heads,
            n_positions=size.positions,
            **ids,
        )
        model = GPT2LMHeadModel(config)
    elif kind == "llama":
        config = LlamaConfig(
            vocab_size=len(tokenizer),
            hidden_size=size.hidden,
            intermediate_size=size.intermediate,
            num_hidden_layers=size.layers,
            num_attention_heads=size.heads,
            num_key_value_heads=size.kv_heads,
            max_position_embeddings=size.positions,
            **ids,
        )
        model = LlamaForCausalLM(config)
    else:
        raise ValueError(f"model kind must be bert, gpt2 or llama, got {kind!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def parameter_count(folder: Path) -> int:
    from safetensors import safe_open

    total = 0
    for path in sorted(Path(folder).glob("*.safetensors")):
        with safe_open(str(path), framework="pt") as f:
            for key in f.keys():  # noqa: SIM118 -- safe_open is not a mapping
                total += math.prod(int(dim) for dim in f.get_slice(key).get_shape())
    return total
