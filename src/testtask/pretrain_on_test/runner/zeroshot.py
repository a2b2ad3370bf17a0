"""Zero-shot protocol of §9 / App. G: LoRA (QLoRA on GPU) pretraining on prompts, then class-name likelihoods.

A prompt is a header (the task statement with the class names) followed by a text block and the answer marker.
Pretraining is one epoch of causal-LM training on the prompts of `extra` (acc_extra) or of `test` (acc_test);
acc_base uses the model without adapters. `train` is unused. Prediction is the class whose name (the tokens
after the answer marker) has the highest summed log-probability.

Padding: every prompt is its own sequence, padded in the batch. Packing (§9.1): the header once, then
`pack_size` text blocks in one sequence, attending across texts (no document masking), as in the paper's example.
Sequences are assembled from token ids, so the training and scoring prompts are identical token for token.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import torch

from testtask.hf import DeviceError, load_tokenizer
from testtask.pretrain_on_test.runner.datasets import DatasetSpec
from testtask.pretrain_on_test.runner.subsample import Subsample
from testtask.pretrain_on_test.runner.training import TrainStats, train


@dataclass(frozen=True)
class PackedSequence:
    input_ids: list[int]
    documents: tuple[
        int, ...
    ]  # positions (in the input list of texts) of the texts packed into this sequence


class PromptBuilder:
    """Token-level prompts for one dataset."""

    def __init__(self, tokenizer: Any, spec: DatasetSpec, prompt: Mapping[str, str], max_text_tokens: int):
        self.tokenizer = tokenizer
        self.max_text_tokens = max_text_tokens
        self.text_template = str(prompt["text"])
        if "{text}" not in self.text_template:
            raise ValueError("lm.prompt.text must contain {text}")
        header = str(prompt["header"]).format(classes="\n".join(spec.classes), description=spec.description)
        self.bos = [tokenizer.bos_token_id] if tokenizer.bos_token_id is not None else []
        self.header = self._ids(header)
        self.before_text, self.after_text = (self._ids(p) for p in self.text_template.split("{text}", 1))
        self.answer = self._ids(str(prompt["answer"]))
        self.class_ids = [self._continuation(str(prompt["answer"]), name) for name in spec.classes]

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _continuation(self, answer: str, name: str) -> list[int]:
        """Tokens of ' <name>' as they follow the answer marker (tokenizers merge across the boundary)."""
        full = self._ids(answer + " " + name)
        if full[: len(self.answer)] == self.answer and len(full) > len(self.answer):
            return full[len(self.answer) :]
        return self._ids(" " + name)

    def text_block(self, text: str) -> list[int]:
        return self.before_text + self._ids(text)[: self.max_text_tokens] + self.after_text

    def prompt(self, text: str) -> list[int]:
        """The inference prompt, which is also a padding-mode pretraining sequence."""
        return self.bos + self.header + self.text_block(text) + self.answer

    def packed(self, texts: Sequence[str], pack_size: int) -> list[PackedSequence]:
        """Header once, then `pack_size` text blocks per sequence (the last sequence may hold fewer)."""
        out = []
        for start in range(0, len(texts), pack_size):
            docs = tuple(range(start, min(start + pack_size, len(texts))))
            ids = self.bos + self.header + [t for d in docs for t in self.text_block(texts[d])]
            out.append(PackedSequence(ids, docs))
        return out


def load_causal_lm(lm: Mapping[str, Any], device: str) -> Any:
    """The base model: 4-bit NF4 (QLoRA) on CUDA, or unquantized for plain LoRA (CPU or GPU)."""
    from transformers import AutoModelForCausalLM

    quantization = str(lm.get("quantization", "none"))
    name = str(lm["model"])
    cuda = device.startswith("cuda")
    if quantization == "nf4":
        if not cuda:
            raise DeviceError(
                "QLoRA loads the model in 4-bit NF4 with bitsandbytes, which needs a CUDA GPU, and this machine "
                "has none. Run with lm.quantization=none for plain (unquantized) LoRA, which uses the same code "
                "path otherwise and runs on CPU."
            )
        from peft import prepare_model_for_kbit_training
        from transformers import BitsAndBytesConfig

        bnb = BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16,
        )
        model = AutoModelForCausalLM.from_pretrained(
            name, quantization_config=bnb, device_map={"": device}, dtype=torch.bfloat16
        )
        return prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=bool(lm["pretrain"].get("gradient_checkpointing", True))
        )
    if quantization != "none":
        raise ValueError(f"lm.quantization must be nf4 or none, got {quantization!r}")
    dtype = torch.bfloat16 if cuda else torch.float32
    return AutoModelForCausalLM.from_pretrained(name, dtype=dtype).to(device)


class ZeroShot:
    def __init__(self, lm: Mapping[str, Any], spec: DatasetSpec, *, device: str, show_progress: bool = True):
        self.lm = lm
        self.spec = spec
        self.device = device
        self.show_progress = show_progress
        self.tokenizer = load_tokenizer(str(lm["model"]))
        self.prompts = PromptBuilder(self.tokenizer, spec, lm["prompt"], int(lm["max_text_tokens"]))
        self.model = load_causal_lm(lm, device)  # loaded once per cell; adapters come and go

    def pretraining_features(self, texts: Sequence[str]) -> list[dict[str, list[int]]]:
        if bool(self.lm.get("packing", False)):
            seqs = [p.input_ids for p in self.prompts.packed(list(texts), int(self.lm["pack_size"]))]
        else:
            seqs = [self.prompts.prompt(t) for t in texts]
        return [{"input_ids": s, "attention_mask": [1] * len(s)} for s in seqs]

    def pretrain(self, texts: Sequence[str], seed: int) -> tuple[Any, TrainStats]:
        """Wrap the base model in fresh LoRA adapters and train them for one pass over the prompts."""
        from peft import LoraConfig, get_peft_model
        from transformers import DataCollatorForLanguageModeling, set_seed

        set_seed(seed)
        lora = self.lm["lora"]
        config = LoraConfig(
            r=int(lora["r"]),
            lora_alpha=int(lora["alpha"]),
            lora_dropout=float(lora["dropout"]),
            bias=str(lora["bias"]),
            target_modules=lora["target_modules"]
            if isinstance(lora["target_modules"], str)
            else list(lora["target_modules"]),
            task_type="CAUSAL_LM",
        )
        model = get_peft_model(self.model, config)
        collate = DataCollatorForLanguageModeling(self.tokenizer, mlm=False)
        stats = train(
            model,
            self.pretraining_features(texts),
            collate,
            self.lm["pretrain"],
            device=self.device,
            seed=seed,
            show_progress=self.show_progress,
        )
        return model, stats

    @torch.no_grad()
    def class_log_likelihoods(self, model: Any, texts: Sequence[str]) -> np.ndarray:
        """log p(class name | prompt) for every text (rows) and class (columns)."""
        model.eval()
        items = [
            (i, k, self.prompts.prompt(t), c)
            for i, t in enumerate(texts)
            for k, c in enumerate(self.prompts.class_ids)
        ]
        scores = np.zeros((len(texts), len(self.prompts.class_ids)))
        batch_size = int(self.lm.get("eval_batch_size", 8))
        pad = self.tokenizer.pad_token_id
        for start in range(0, len(items), batch_size):
            chunk = items[start : start + batch_size]
            seqs = [p + c for _, _, p, c in chunk]
            width = max(map(len, seqs))
            ids = torch.full((len(seqs), width), pad, dtype=torch.long)
            mask = torch.zeros((len(seqs), width), dtype=torch.long)
            for row, seq in enumerate(seqs):
                ids[row, : len(seq)] = torch.tensor(seq)
                mask[row, : len(seq)] = 1
            logits = model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits.float()
            logp = torch.log_softmax(logits, dim=-1).cpu()
            for row, (i, k, prompt, cont) in enumerate(chunk):
                positions = torch.arange(len(prompt) - 1, len(prompt) - 1 + len(cont))
                scores[i, k] = float(logp[row, positions, torch.tensor(cont)].sum())
        return scores

    def accuracy(self, model: Any, test_frame: pd.DataFrame) -> float:
        predictions = self.class_log_likelihoods(model, list(test_frame["text"])).argmax(axis=1)
        return float(np.mean(predictions == test_frame["label"].to_numpy()))

    def run(self, data: pd.DataFrame, sub: Subsample, seed: int) -> tuple[dict[str, float], dict[str, Any]]:
        test_frame = data.iloc[sub.test]
        acc = {"base": self.accuracy(self.model, test_frame)}
        record: dict[str, Any] = {}
        for name, texts in (("extra", data["text"].iloc[sub.extra]), ("test", test_frame["text"])):
            model, stats = self.pretrain(list(texts), seed)
            acc[name] = self.accuracy(model, test_frame)
            record.update(stats.as_dict(f"pretrain_{name}"))
            self.model = model.unload()  # drop the adapters: the next pretraining starts from the base model
        return acc, record
