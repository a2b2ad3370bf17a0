"""Few-shot protocol of §4: task-adaptive pretraining on unlabeled texts, then a linear head fine-tuned on train.

acc_base: the LM fine-tuned on train; acc_extra / acc_test: first pretrained on the n `extra` / unlabeled `test`
texts. Every accuracy starts from a freshly loaded model. The authors' code cuts pretraining texts at 256 tokens
(kddubey/pretrain-on-test@80fd183:run.py:53,63 -> src/pretrain_on_test/pretrain.py:31-38) but classification texts
only at the tokenizer's `model_max_length` (classification.py:30-33).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import torch

from testtask.lm.hf import load_tokenizer
from testtask.pretrain_on_test.runner.settings import Classify, FewShotLm, Objective, Stage
from testtask.pretrain_on_test.runner.subsample import Subsample
from testtask.pretrain_on_test.runner.training import TrainStats, train


class FewShot:
    """One LM type's few-shot protocol (config: `lm` group with protocol few_shot)."""

    def __init__(self, lm: FewShotLm, *, num_classes: int, device: str, show_progress: bool = True):
        self.lm = lm
        self.objective = lm.objective
        self.num_classes = num_classes
        self.device = device
        self.show_progress = show_progress
        self.callbacks: list[Any] = []  # more Trainer callbacks for every training (the GPU bench's timer)
        self.tokenizer = load_tokenizer(lm.model)

    def _encode(
        self, texts: Sequence[str], max_length: int | None, labels: Sequence[int] | None = None
    ) -> list[dict[str, Any]]:
        """Token ids cut at `max_length` (None: the tokenizer's model_max_length, as the authors' classifier)."""
        limit = None if max_length is None else int(max_length)
        enc = self.tokenizer(list(texts), truncation=True, max_length=limit)
        rows = [
            {"input_ids": ids, "attention_mask": mask}
            for ids, mask in zip(enc["input_ids"], enc["attention_mask"], strict=True)
        ]
        if labels is not None:
            for row, label in zip(rows, labels, strict=True):
                row["labels"] = int(label)
        return rows

    def _train(
        self, model: Any, features: list[dict[str, Any]], collate: Any, hp: Stage, seed: int
    ) -> TrainStats:
        return train(
            model,
            features,
            collate,
            hp,
            device=self.device,
            seed=seed,
            show_progress=self.show_progress,
            gradient_checkpointing=False,  # the authors' few-shot Trainer calls never checkpoint
            callbacks=self.callbacks,
        )

    def pretrain(self, texts: Sequence[str], out_dir: str, seed: int) -> TrainStats:
        """Task-adaptive pretraining with the model's own objective; saves the LM to `out_dir`."""
        from transformers import (
            AutoModelForCausalLM,
            AutoModelForMaskedLM,
            DataCollatorForLanguageModeling,
            set_seed,
        )

        set_seed(seed)
        mlm = self.objective == Objective.mlm
        auto = AutoModelForMaskedLM if mlm else AutoModelForCausalLM
        model = auto.from_pretrained(self.lm.model)
        hp = self.lm.pretrain
        masking = {"mlm_probability": hp.mlm_probability} if mlm else {}
        collate = DataCollatorForLanguageModeling(self.tokenizer, mlm=mlm, **masking)
        stats = self._train(model, self._encode(texts, hp.max_length), collate, hp, seed)
        model.save_pretrained(out_dir)
        self.tokenizer.save_pretrained(out_dir)
        return stats

    def classify(
        self, weights: str, train_frame: pd.DataFrame, test_frame: pd.DataFrame, seed: int
    ) -> tuple[float, TrainStats]:
        """Fine-tune a linear head (and all weights) on train; return test accuracy."""
        from transformers import AutoModelForSequenceClassification, DataCollatorWithPadding, set_seed

        set_seed(seed)
        model = AutoModelForSequenceClassification.from_pretrained(weights, num_labels=self.num_classes)
        model.config.pad_token_id = self.tokenizer.pad_token_id
        hp = self.lm.classify
        collate = DataCollatorWithPadding(self.tokenizer)
        features = self._encode(train_frame["text"], hp.max_length, train_frame["label"])
        stats = self._train(model, features, collate, hp, seed)
        predictions = self.predict(model, test_frame["text"], hp, collate)
        return float(np.mean(predictions == test_frame["label"].to_numpy())), stats

    @torch.no_grad()
    def predict(self, model: Any, texts: Sequence[str], hp: Classify, collate: Any) -> np.ndarray:
        """argmax of the head's logits (= argmax of the authors' softmax, experiment.py:195-197)."""
        model.eval()
        model.to(self.device)
        batch_size = hp.eval_batch_size
        rows = self._encode(list(texts), hp.max_length)
        out = []
        for start in range(0, len(rows), batch_size):
            batch = {k: v.to(self.device) for k, v in collate(rows[start : start + batch_size]).items()}
            out.append(model(**batch).logits.argmax(-1).cpu().numpy())
        return np.concatenate(out)

    def run(self, data: pd.DataFrame, sub: Subsample, seed: int) -> tuple[dict[str, float], dict[str, Any]]:
        """acc_base, acc_extra and acc_test for one subsample, with timings and losses for the run log."""
        train_frame, test_frame = data.iloc[sub.train], data.iloc[sub.test]
        base_acc, stats = self.classify(self.lm.model, train_frame, test_frame, seed)
        acc = {"base": base_acc}
        record = stats.as_dict("classify_base")
        for name, texts in (("extra", data["text"].iloc[sub.extra]), ("test", test_frame["text"])):
            with tempfile.TemporaryDirectory(prefix=f"testtask-{name}-") as tmp:
                pstats = self.pretrain(list(texts), tmp, seed)
                acc[name], cstats = self.classify(tmp, train_frame, test_frame, seed)
            record.update(pstats.as_dict(f"pretrain_{name}"))
            record.update(cstats.as_dict(f"classify_{name}"))
        return acc, record
