"""A process pool kept for the life of the program, so its workers start (and import numba code) once."""

from __future__ import annotations

import atexit
import multiprocessing
from concurrent.futures import ProcessPoolExecutor

_POOLS: dict[int, ProcessPoolExecutor] = {}


def process_pool(workers: int) -> ProcessPoolExecutor:
    """A spawn-context pool of `workers` processes (spawn: safe beside the threads numba and nutpie start)."""
    if workers not in _POOLS:
        _POOLS[workers] = ProcessPoolExecutor(
            max_workers=workers, mp_context=multiprocessing.get_context("spawn")
        )
    return _POOLS[workers]


@atexit.register
def _shutdown() -> None:
    for pool in _POOLS.values():
        pool.shutdown(wait=False, cancel_futures=True)
