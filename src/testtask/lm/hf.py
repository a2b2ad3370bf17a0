"""Small transformers/torch helpers shared by every runner: device choice and tokenizer loading."""

from __future__ import annotations

from typing import Any

import torch

from testtask.errors import InputError


class DeviceError(InputError, RuntimeError):
    pass


def pick_device(requested: str = "auto") -> str:
    """`auto` -> cuda when present, else cpu; an explicit cuda request without a GPU is an error."""
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested.startswith("cuda") and not torch.cuda.is_available():
        raise DeviceError(
            f"device={requested} was requested but torch sees no CUDA GPU; use device=cpu or auto"
        )
    return requested


def load_tokenizer(name: str, *, trust_remote_code: bool = False, revision: str | None = None) -> Any:
    """The model's tokenizer, EOS as the pad token where it has none (GPT-2, Llama; as the authors'
    train.py:71-73)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(name, trust_remote_code=trust_remote_code, revision=revision)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer
