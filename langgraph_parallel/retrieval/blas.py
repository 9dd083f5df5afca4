"""Run a search's small matrix products on one BLAS thread: the machine's cores are the engine's.

numpy's OpenBLAS splits every product over all cores, and its worker threads then spin, waiting
for the next one. For a query's encoder pass (a few short texts) and the exact scan of a
retrieval corpus that buys a few milliseconds on an idle machine and costs twice the CPU; where
an engine shares the machine (an ``ask`` beside its model server, 16 runs against one
``serve``), the spinning takes the cores the engine needs. Measured on the 2-core AMD EPYC (AVX2)
against a stub model server, 64 questions of two search turns each on the hybrid index, the
client's CPU a question: idle machine 0.16 s with OpenBLAS's two threads, 0.062 s with one, at
the same wall time; both cores busy (two spinning processes standing in for the engine) 0.24 s
against 0.048 s at one run at a time and 0.41 s against 0.057 s at 16, where the 64 questions
took 26.2 s against 5.9 s.

:func:`one_blas_thread` sets one BLAS thread for its block and gives the process its own count
back after it, so a caller's numpy elsewhere keeps its threads. threadpoolctl does the setting
(it finds the BLAS numpy loaded, whichever it is).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["one_blas_thread"]

# OpenBLAS keeps one thread count for the whole process: one block at a time sets it and gives it
# back, on the thread that set it (a count set on another thread was not always honoured).
_lock = threading.RLock()
_controller: Any = None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with BLAS on one thread, then give the process back its own count."""
    global _controller
    with _lock:
        if _controller is None:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()  # finds the BLAS loaded now: ~20 ms, once
        limit = _controller.limit(limits=1, user_api="blas")
        try:
            yield
        finally:
            limit.restore_original_limits()
