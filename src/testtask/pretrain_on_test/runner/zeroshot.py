"""Zero-shot protocol of §9 / App. G as the authors' code ran it (A = kddubey/pretrain-on-test@80fd183).

Pretraining: one epoch of causal-LM training of fresh LoRA adapters (QLoRA: NF4 base weights) on prompts of the
`extra` (acc_extra) or `test` (acc_test) texts; acc_base uses the model without adapters; `train` is unused.

Prompt strings: A src/pretrain_on_test/_dum.py:54-70 (padding), :241-251 (packing, §9.1: the instruction once, then
`pack_size` text blocks in draw order, no answer marker). Training strings are tokenized whole with special tokens
and cut at `max_seq_length`, as A's SFTTrainer does.

Prediction (A _dum.py:363-385, CAPPr): each class name is scored as a completion of the prompt by the mean of its
token log-probabilities; CAPPr tokenizes instruction, text-and-answer and class name separately (`segments`).

A scores on a plain 4-bit load with the trained adapters loaded onto it (_dum.py:196-210), while training runs on a
model prepared by `prepare_model_for_kbit_training`: `lm.score_on_plain_load` keeps both.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from testtask.lm.hf import load_tokenizer
from testtask.pretrain_on_test.runner.settings import (
    DatasetSpec,
    Prediction,
    PromptTemplate,
    Quantization,
    ScoringTokenization,
    ZeroShotLm,
)
from testtask.pretrain_on_test.runner.subsample import Subsample
from testtask.pretrain_on_test.runner.training import TrainStats, train

log = logging.getLogger("testtask.runner")


class PromptBuilder:
    """The authors' prompt strings for one dataset, and their token ids."""

    def __init__(
        self,
        tokenizer: Any,
        spec: DatasetSpec,
        template: PromptTemplate,
        scoring_tokenization: ScoringTokenization,
    ):
        self.tokenizer = tokenizer
        self.template = template
        self.classes = spec.classes
        self.scoring_tokenization = scoring_tokenization
        self.instruction = template.instruction.format(
            classes=template.class_separator.join(spec.classes), description=spec.description
        )
        self.space = template.segment_separator if needs_prepended_space(tokenizer) else ""

    def query(self, text: str) -> str:
        """One text block: the text cut at max_text_chars characters (A _dum.py:65-66)."""
        return self.template.query.format(text=text[: self.template.max_text_chars])

    def prompt(self, text: str) -> str:
        """The scoring prompt, which is also the padding-mode training string (A _dum.py:94-116)."""
        return self.instruction + self.query(text) + self.template.answer

    def packed(self, texts: Sequence[str], pack_size: int) -> list[str]:
        """Instruction once, then `pack_size` blocks joined by pack_separator, in the given order (A :241-251)."""
        return [
            self.instruction
            + self.template.pack_separator.join(self.query(t) for t in texts[i : i + pack_size])
            for i in range(0, len(texts), pack_size)
        ]

    def encode(self, text: str, max_length: int | None = None) -> list[int]:
        """One string tokenized whole with the tokenizer's special tokens, cut at max_length (A's SFTTrainer)."""
        ids = list(self.tokenizer(text, add_special_tokens=True)["input_ids"])
        return ids if max_length is None else ids[:max_length]

    def _bare(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def scoring_ids(self, text: str) -> tuple[list[int], list[list[int]]]:
        """The prompt's ids and each class name's continuation ids."""
        # CAPPr: instruction | text and answer | class name
        if self.scoring_tokenization == ScoringTokenization.segments:
            prompt = self.encode(self.instruction) + self._bare(
                self.space + self.query(text) + self.template.answer
            )
            return prompt, [self._bare(self.space + name) for name in self.classes]
        full = self.prompt(text)
        prompt = self.encode(full)
        return prompt, [self._continuation(full, prompt, name) for name in self.classes]

    def _continuation(self, full: str, prompt: list[int], name: str) -> list[int]:
        """Tokens of ' <name>' as they follow the prompt (tokenizers may merge across the boundary)."""
        whole = self.encode(full + self.template.segment_separator + name)
        if whole[: len(prompt)] == prompt and len(whole) > len(prompt):
            return whole[len(prompt) :]
        return self._bare(self.template.segment_separator + name)


def needs_prepended_space(tokenizer: Any) -> bool:
    """Whether separately tokenized segments need a leading space (BPE) or not (SentencePiece), as CAPPr checks."""

    def ids(text: str) -> list[int]:
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])

    return ids("a b") != ids("a") + ids("b")


def class_probabilities(token_logprobs: Sequence[Sequence[np.ndarray]], rule: Prediction) -> np.ndarray:
    """Per text (rows) and class (columns): exp(mean) or exp(sum) of the class tokens' log-probs, normalised."""
    aggregate = np.mean if rule == Prediction.mean_logprob else np.sum
    scores = np.array([[float(aggregate(lp)) for lp in row] for row in token_logprobs])
    scores -= scores.max(axis=1, keepdims=True)  # exp() of the largest is 1: no underflow of every class
    likelihoods = np.exp(scores)
    return likelihoods / likelihoods.sum(axis=1, keepdims=True)


def compute_dtype(lm: ZeroShotLm) -> torch.dtype:
    """`lm.bnb_4bit_compute_dtype`: the dtype NF4 weights are dequantized to for each matmul."""
    return getattr(torch, lm.bnb_4bit_compute_dtype.value)


def keep_nf4_layout(model: Any) -> None:
    """Turn off bitsandbytes' CPU repacking of NF4 weights for inference: with AVX512-BF16 every state_dict()
    after it writes them back with the nested absmax re-quantized, so the base model would drift a little with every
    repetition (~1e-4 in scores after one). The plain path computes the same NF4 product."""
    for module in model.modules():
        if hasattr(module, "support_avx512bf16_for_cpu"):
            module.support_avx512bf16_for_cpu = False


def load_causal_lm(lm: ZeroShotLm, device: str, *, prepare: bool) -> Any:
    """The base model: 4-bit NF4 (QLoRA), prepared for k-bit training if `prepare`; or unquantized."""
    from transformers import AutoModelForCausalLM

    name = lm.model
    cuda = device.startswith("cuda")
    if lm.quantization == Quantization.nf4:
        from transformers import BitsAndBytesConfig

        bnb = BitsAndBytesConfig(  # A _dum.py:188-193
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=compute_dtype(lm),
        )
        model = AutoModelForCausalLM.from_pretrained(
            name, quantization_config=bnb, device_map={"": device}, dtype=torch.bfloat16
        )
        if not cuda:
            keep_nf4_layout(model)
        if not prepare:
            return model
        from peft import prepare_model_for_kbit_training

        return prepare_model_for_kbit_training(  # A _dum.py:273-275
            model, use_gradient_checkpointing=lm.pretrain.gradient_checkpointing
        )
    dtype = torch.bfloat16 if cuda else torch.float32
    return AutoModelForCausalLM.from_pretrained(name, dtype=dtype).to(device)


def lora_config(lm: ZeroShotLm) -> Any:
    from peft import LoraConfig

    lora = lm.lora
    targets = lora.target_modules
    return LoraConfig(  # A _dum.py:277-284
        r=lora.r,
        lora_alpha=lora.alpha,
        lora_dropout=float(lora.dropout),
        bias=lora.bias.value,
        target_modules=targets if isinstance(targets, str) else list(targets),
        task_type="CAUSAL_LM",
    )


class ZeroShot:
    def __init__(self, lm: ZeroShotLm, spec: DatasetSpec, *, device: str, show_progress: bool = True):
        self.lm = lm
        self.spec = spec
        self.device = device
        self.show_progress = show_progress
        self.callbacks: list[Any] = []  # more Trainer callbacks for every pretraining (the GPU bench's timer)
        self.rule = lm.prediction
        self.tokenizer = load_tokenizer(lm.model)
        self.prompts = PromptBuilder(self.tokenizer, spec, lm.prompt, lm.scoring_tokenization)
        # Loaded once per cell; adapters come and go. A separate training model only where preparing for k-bit
        # training changes the model (nf4) and scoring should see the plain load.
        separate = lm.quantization == Quantization.nf4 and lm.score_on_plain_load
        self.model = load_causal_lm(lm, device, prepare=not separate)
        self.training_model = load_causal_lm(lm, device, prepare=True) if separate else self.model
        self.shared = not separate

    def pretraining_texts(self, texts: Sequence[str]) -> list[str]:
        if self.lm.packing:
            return self.prompts.packed(list(texts), self.lm.pack_size)
        return [self.prompts.prompt(t) for t in texts]

    def pretraining_features(self, texts: Sequence[str]) -> list[dict[str, list[int]]]:
        limit = self.lm.max_seq_length
        seqs = [self.prompts.encode(s, limit) for s in self.pretraining_texts(texts)]
        return [{"input_ids": s, "attention_mask": [1] * len(s)} for s in seqs]

    def pretrain(self, texts: Sequence[str], seed: int) -> tuple[Any, TrainStats]:
        """Wrap the training model in fresh LoRA adapters and train them for one pass over the prompts."""
        from peft import get_peft_model
        from transformers import DataCollatorForLanguageModeling, set_seed

        set_seed(seed)
        model = get_peft_model(self.training_model, lora_config(self.lm))
        collate = DataCollatorForLanguageModeling(self.tokenizer, mlm=False)
        stats = train(
            model,
            self.pretraining_features(texts),
            collate,
            self.lm.pretrain,
            device=self.device,
            seed=seed,
            show_progress=self.show_progress,
            gradient_checkpointing=self.lm.pretrain.gradient_checkpointing,
            callbacks=self.callbacks,
        )
        return model, stats

    def scoring_model(self, trained: Any) -> Any:
        """The trained adapters on the scoring model (the trained model itself when the two are one)."""
        if self.shared:
            return trained
        from peft import get_peft_model, get_peft_model_state_dict, set_peft_model_state_dict

        scorer = get_peft_model(self.model, lora_config(self.lm))
        set_peft_model_state_dict(scorer, get_peft_model_state_dict(trained))
        return scorer

    def drop_adapters(self, trained: Any, scorer: Any = None) -> None:
        """Remove the adapters, so the next pretraining (and scoring) starts again from the base model."""
        self.training_model = trained.unload()
        if self.shared:
            self.model = self.training_model
        elif scorer is not None:
            self.model = scorer.unload()

    @torch.no_grad()
    def class_token_logprobs(self, model: Any, texts: Sequence[str]) -> list[list[np.ndarray]]:
        """log p of each class name token given the prompt and the earlier name tokens, per text and class."""
        model.eval()
        items = []
        for i, text in enumerate(texts):
            prompt, names = self.prompts.scoring_ids(text)
            items += [(i, k, prompt, name) for k, name in enumerate(names)]
        out: list[list[np.ndarray]] = [[np.empty(0)] * len(self.spec.classes) for _ in texts]
        batch_size = self.lm.eval_batch_size
        for start in range(0, len(items), batch_size):
            chunk = items[start : start + batch_size]
            logp = self._logprobs(model, [p + c for _, _, p, c in chunk])
            for row, (i, k, prompt, name) in enumerate(chunk):
                positions = torch.arange(len(prompt) - 1, len(prompt) - 1 + len(name))
                out[i][k] = logp[row, positions, torch.tensor(name)].numpy()
        return out

    def _logprobs(self, model: Any, seqs: list[list[int]]) -> torch.Tensor:
        """Next-token log-probabilities of right-padded sequences (batch × position × vocabulary), on CPU."""
        width = max(map(len, seqs))
        ids = torch.full((len(seqs), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, seq in enumerate(seqs):
            ids[row, : len(seq)] = torch.tensor(seq)
            mask[row, : len(seq)] = 1
        logits = model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
        return torch.log_softmax(logits.float(), dim=-1).cpu()

    def class_probabilities(self, model: Any, texts: Sequence[str]) -> np.ndarray:
        """The prediction rule's normalised class probabilities per text (rows) and class (columns)."""
        return class_probabilities(self.class_token_logprobs(model, texts), self.rule)

    def accuracy(self, model: Any, test_frame: pd.DataFrame) -> float:
        predictions = self.class_probabilities(model, list(test_frame["text"])).argmax(axis=1)
        return float(np.mean(predictions == test_frame["label"].to_numpy()))

    def run(self, data: pd.DataFrame, sub: Subsample, seed: int) -> tuple[dict[str, float], dict[str, Any]]:
        test_frame = data.iloc[sub.test]
        acc = {"base": self.accuracy(self.model, test_frame)}
        record: dict[str, Any] = {}
        for name, texts in (("extra", data["text"].iloc[sub.extra]), ("test", test_frame["text"])):
            trained, stats = self.pretrain(list(texts), seed)
            scorer = self.scoring_model(trained)
            acc[name] = self.accuracy(scorer, test_frame)
            record.update(stats.as_dict(f"pretrain_{name}"))
            self.drop_adapters(trained, scorer)
        return acc, record
