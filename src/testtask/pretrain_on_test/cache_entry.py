"""What a cached posterior must carry to be trusted: the key it was fitted under and the model code's version
(a file's name proves nothing: a file copied over another, a cache kept across a change of the likelihood)."""

from __future__ import annotations

import functools
import hashlib
import inspect
from collections.abc import Mapping
from typing import Any

KEY = "cache_key"
VERSION = "model_code_version"


def _model_code() -> list[Any]:
    """The code that decides what a posterior is (summaries and figures left out)."""
    from testtask.pretrain_on_test import hierarchical, kernel, kernel_sampler, refit, sampling, settings

    return [
        kernel,
        kernel_sampler,
        sampling,
        settings.Priors,
        settings.ModelSpec,
        hierarchical.ModelData,
        hierarchical.build_marginal,
        hierarchical.build_bambi,
        hierarchical.choose_noncentered,
        hierarchical.resolve_spec,
        refit,
    ]


@functools.cache
def model_code_version() -> str:
    """A hash of the source of the model code (`_model_code`): no hand-kept constant can be forgotten."""
    h = hashlib.sha256()
    for part in _model_code():
        h.update(inspect.getsource(part).encode())
    return h.hexdigest()[:16]


def stamp(key: str) -> dict[str, str]:
    """The attributes an entry fitted under `key` stores about itself."""
    return {KEY: key, VERSION: model_code_version()}


def mismatch(stored: Mapping[str, Any], key: str) -> str | None:
    """How the attributes an entry stores differ from those expected for `key`, in words; None when they match."""
    problems = []
    for name, expected in stamp(key).items():
        found = stored.get(name)
        if found is None:
            problems.append(f"it stores no {name} (expected {expected})")
        elif str(found) != expected:
            problems.append(f"its {name} is {found}, expected {expected}")
    return "; ".join(problems) or None
