"""Shared pieces of the train-before-test runner tests: the offline fixture, the tiny preset composed on it."""

from __future__ import annotations

from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from testtask.paths import conf_dir


def compose_run(*overrides: str, hydra_config: bool = False):
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=None):
        cfg = compose("train_before_test_run", overrides=list(overrides), return_hydra_config=hydra_config)
    if not hydra_config:
        OmegaConf.set_struct(cfg, False)
    return cfg


def tiny_config(root: Path, *overrides: str):
    """The `tiny` preset on the fixture below `root`, writing results and checkpoints there too."""
    return compose_run(
        "experiment=train_before_test/tiny",
        f"tiny_root={root / 'fixture'}",
        f"results_dir={root / 'results'}",
        f"work_dir={root / 'work'}",
        *overrides,
    )


def cheap_env_info(results: dict) -> None:
    """lm-eval asks torch's collect_env (pip list and friends, ~1 s) for every score; tests skip that."""
    results["pretty_env_info"] = "(not collected in tests)"


CHAT_TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} <|end|> {% endfor %}"
    "{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def chat_tokenizer(folder: Path, words: str = ""):
    """A tiny Llama's tokenizer that adds its BOS itself (as Llama-3's and Gemma's do) and has a chat template
    that writes the BOS too: tokenizing the rendered chat with special tokens gives two BOS."""
    from tokenizers.processors import TemplateProcessing

    from testtask.lm.hf import load_tokenizer
    from testtask.lm.tiny_llama import build_tiny_llama

    texts = [words, "You are helpful <|system|> <|user|> <|assistant|> <|end|>"]
    tokenizer = load_tokenizer(str(build_tiny_llama(folder, texts, max_positions=64)))
    bos = (tokenizer.bos_token, tokenizer.bos_token_id)
    tokenizer.backend_tokenizer.post_processor = TemplateProcessing(
        single=f"{bos[0]} $A", special_tokens=[bos]
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer
