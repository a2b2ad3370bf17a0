"""The device itself: torch computes on it; bitsandbytes' NF4 and 8-bit optimizer work on it (paged optimizer memory
on a GPU only); on a GPU, its bf16 kernels."""

from __future__ import annotations

import time
from typing import Any

from testtask.preflight.registry import WHOLE, check

PAGED_REASON = (
    "paged optimizer states live in CUDA unified memory; on the CPU bitsandbytes keeps them as ordinary tensors "
    "(and warns)"
)

MATMUL = 512


def _gflops(device: str, dtype: Any, repeats: int = 5) -> float:
    import torch

    a = torch.randn(MATMUL, MATMUL, device=device, dtype=dtype)
    b = torch.randn(MATMUL, MATMUL, device=device, dtype=dtype)
    (a @ b).sum().item()  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        c = a @ b
    c.sum().item()  # waits for the GPU
    return 2 * MATMUL**3 * repeats / (time.perf_counter() - start) / 1e9


@check("torch_device", "torch computes, backpropagates and steps AdamW on the device")
def torch_device(ctx) -> dict[str, Any]:
    import torch

    torch.manual_seed(0)
    layer = torch.nn.Linear(64, 64).to(ctx.device)
    optimizer = torch.optim.AdamW(layer.parameters(), lr=1e-2)
    x = torch.randn(32, 64, device=ctx.device)
    losses = []
    for _ in range(5):
        loss = (layer(x) - x).pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    if not losses[-1] < losses[0]:
        raise AssertionError(f"five AdamW steps did not lower a linear layer's loss: {losses}")
    numbers: dict[str, Any] = {
        "device": str(x.device),
        "loss_first": losses[0],
        "loss_last": losses[-1],
        "fp32_matmul_gflops": round(_gflops(ctx.device, torch.float32), 1),
    }
    if not ctx.cuda:
        numbers["torch_threads"] = torch.get_num_threads()
    return numbers


@check(
    "cuda_bf16",
    "bf16 matmul and autocast on the GPU; FlashAttention-2 present or not",
    needs=["cuda"],
    cuda_only={
        WHOLE: "the GPU's own bf16 support (compute capability), its bf16 matmul kernels and FlashAttention-2 (CUDA "
        "kernels); bf16 training on the CPU is shown by tott_finetune_bf16* and pot_zeroshot_*"
    },
)
def cuda_bf16(ctx) -> dict[str, Any]:
    import importlib.util

    import torch

    major, minor = torch.cuda.get_device_capability()
    if not torch.cuda.is_bf16_supported():
        raise AssertionError(
            f"this GPU (sm_{major}{minor}) does not support bf16, which the recipes train in"
        )
    a = torch.randn(256, 256, device=ctx.device)
    exact = a @ a
    with torch.autocast("cuda", dtype=torch.bfloat16):
        mixed = a @ a
    if mixed.dtype != torch.bfloat16:
        raise AssertionError(f"autocast to bf16 gave {mixed.dtype}")
    error = float((mixed.float() - exact).norm() / exact.norm())
    if error > 0.05:
        raise AssertionError(f"bf16 autocast matmul is off by {error:.3g} (relative)")
    return {
        "capability": f"{major}.{minor}",
        "bf16_relative_error": error,
        "bf16_matmul_gflops": round(_gflops(ctx.device, torch.bfloat16), 1),
        "flash_attn_installed": importlib.util.find_spec("flash_attn") is not None,
    }


@check(
    "bitsandbytes_nf4",
    "bitsandbytes: NF4 quantize/dequantize and a paged 8-bit AdamW step on the device",
    cuda_only={"paged optimizer states": PAGED_REASON},
)
def bitsandbytes_nf4(ctx) -> dict[str, Any]:
    import torch

    try:
        import bitsandbytes as bnb
        import bitsandbytes.functional as bnbf
    except ImportError as error:
        raise RuntimeError(
            "bitsandbytes is not installed; the QLoRA runner needs it: make install (a core dependency, pinned in constraints.txt)"
        ) from error
    torch.manual_seed(0)
    weight = torch.randn(256, 256, device=ctx.device, dtype=torch.bfloat16)
    packed, state = bnbf.quantize_4bit(weight, blocksize=64, compress_statistics=True, quant_type="nf4")
    restored = bnbf.dequantize_4bit(packed, state)
    error = float((restored.float() - weight.float()).norm() / weight.float().norm())
    if not error < 0.2:  # NF4 keeps Gaussian weights to about 10% (relative); a broken kernel is far off
        raise AssertionError(f"NF4 round trip is off by {error:.3g} (relative); expected about 0.1")
    # 131,072 elements: 8-bit states (>= 4,096) in paged memory (bitsandbytes pages states of >= 100,000 elements)
    param = torch.nn.Parameter(torch.randn(512, 256, device=ctx.device))
    optimizer = bnb.optim.PagedAdamW8bit([param], lr=1e-3)
    before = param.detach().clone()
    param.grad = torch.randn_like(param)
    optimizer.step()
    state1 = optimizer.state[param]["state1"]
    if state1.dtype != torch.uint8:
        raise AssertionError(f"paged AdamW kept {state1.dtype} states for a {param.numel()}-element tensor")
    paged = bool(getattr(state1, "is_paged", False))
    if ctx.cuda and not paged:  # the CUDA-only part (PAGED_REASON)
        raise AssertionError("paged AdamW kept its states in ordinary device memory, not paged memory")
    changed = float((param.detach() != before).float().mean())
    if changed < 0.9:
        raise AssertionError(f"a paged 8-bit AdamW step changed only {changed:.1%} of the weights")
    return {
        "nf4_relative_error": error,
        "quant_type": state.quant_type,
        "double_quant": bool(state.nested),
        "adamw8bit_state_dtype": str(state1.dtype).removeprefix("torch."),
        "state_paged": paged,
        "paging_checked": ctx.cuda,
        "changed": changed,
    }
