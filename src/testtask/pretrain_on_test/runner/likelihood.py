"""Log-likelihood of token sequences under a causal LM, for the contamination test (§9.2).

log p(x) = Σ_{t ≥ 1} log p(x_t | x_<t), the first token conditioned on, as in Oren et al.'s
`compute_logprob_of_token_sequence` (tatsu-lab/test_set_contamination@56e2257); longer sequences than `context_len`
with their sliding window (each token scored once, in the first window that reaches it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch


def _window_logliks(model: Any, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log p(ids[:, t] | ids[:, :t]) for t ≥ 1 (batch × (width − 1)), zero where mask is zero."""
    logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
    logp = torch.log_softmax(logits, dim=-1).gather(-1, ids[:, 1:].unsqueeze(-1)).squeeze(-1)
    return logp * mask[:, 1:]


@torch.no_grad()
def sequence_logliks(
    model: Any,
    sequences: Sequence[Sequence[int]],
    *,
    pad_id: int,
    device: str,
    batch_size: int,
    context_len: int,
    stride: int,
    progress: Any = None,
) -> np.ndarray:
    """Sum of next-token log-probabilities of each sequence (float64, in input order). `progress`: a tqdm bar."""
    if not 0 < stride <= context_len:
        raise ValueError(f"stride = {stride} must be in 1..context_len = {context_len}")
    model.eval()
    out = np.zeros(len(sequences))
    short = [i for i, s in enumerate(sequences) if len(s) <= context_len + 1]  # context_len inputs, +1 target
    short.sort(key=lambda i: -len(sequences[i]))
    for start in range(0, len(short), batch_size):
        chunk = short[start : start + batch_size]
        width = len(sequences[chunk[0]])
        ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(chunk), width), dtype=torch.long)
        for row, i in enumerate(chunk):
            ids[row, : len(sequences[i])] = torch.as_tensor(list(sequences[i]))
            mask[row, : len(sequences[i])] = 1
        logp = _window_logliks(model, ids.to(device), mask.to(device)).sum(dim=1).double().cpu().numpy()
        out[chunk] = logp
        if progress is not None:
            progress.update(len(chunk))
    for i in (i for i, s in enumerate(sequences) if len(s) > context_len + 1):
        out[i] = _windowed(model, list(sequences[i]), device, context_len, stride)
        if progress is not None:
            progress.update(1)
    return out


def _windowed(model: Any, tokens: list[int], device: str, context_len: int, stride: int) -> float:
    """One long sequence: window j feeds tokens[j·stride : j·stride + context_len] and scores the targets after
    the last one scored so far."""
    total, scored = 0.0, 0  # targets 1..scored are done
    start = 0
    while scored < len(tokens) - 1:
        window = tokens[start : start + context_len + 1]
        ids = torch.as_tensor(window, dtype=torch.long, device=device).unsqueeze(0)
        logp = _window_logliks(model, ids, torch.ones_like(ids))[0]  # targets start+1 .. start+len-1
        first_new = scored - start  # index into logp of target `scored + 1`
        total += float(logp[first_new:].double().sum())
        scored = start + len(window) - 1
        start += stride
    return total
