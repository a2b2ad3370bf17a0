"""Shared by training-on-the-test-task's tests: what the model registry is expected to say."""

from __future__ import annotations

# The models whose repositories ship code transformers has no class for (model and/or tokenizer): Baichuan x4,
# InternLM x4 and Skywork-13B (modeling code), the StableLM-Alpha-v2 models (modeling code), and the Yi-6B and
# MAP-Neo-7B tokenizers. The registry turns trust_remote_code on for these and no other.
REMOTE_CODE = frozenset(
    {
        "baichuan-7b",
        "baichuan-13b",
        "baichuan2-7b",
        "baichuan2-13b",
        "internlm-7b",
        "internlm-20b",
        "internlm2-base-7b",
        "internlm2-base-20b",
        "skywork-13b",
        "stablelm-base-alpha-3b-v2",
        "stablelm-base-alpha-7b-v2",
        "yi-6b",
        "map-neo-7b",
    }
)
