"""The engine worker: vLLM's ``AsyncLLM`` behind a thread-safe ``submit``.

Why a worker at all: LangGraph calls the model from branch threads (``invoke``) and from the
caller's event loop (``ainvoke``), while an ``AsyncLLM`` serves one event loop (its output
handler runs there). The worker owns that loop on a thread and hands every call a
:class:`~concurrent.futures.Future`. When the engine's core process dies, the calls in flight
fail with vLLM's ``EngineDeadError`` and the worker reports itself :attr:`~EngineWorker.dead`, so
:func:`~langgraph_parallel.models.engine.get_engine` starts a new engine for the next call.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar, cast

__all__ = ["EngineWorker"]

T = TypeVar("T")


class EngineWorker:
    """Serves ``submit`` from any thread with an ``AsyncLLM`` driven by an event loop of its own.

    The loop runs on a daemon thread, so sync callers (LangGraph's branch threads) and async
    callers (``ainvoke`` on their own loop, through :func:`asyncio.wrap_future`) share one
    engine.

    Args:
        start_engine: Builds the engine (``AsyncLLM``), outside any running event loop.
        per_request_seeds: Pass each request's ``seed`` to the engine. ``False`` for an engine
            on a CPU without our vLLM plugin (:mod:`.vllm_plugin`, installed with the package):
            vLLM 0.32 rewinds a seeded request's random generator after a partial (chunked)
            prefill with ``Generator.set_offset``, which exists for CUDA generators only; on a
            CPU the engine core dies ("CPU Generator does not use offset") and takes every
            request in flight with it. Such requests then sample from the engine's own
            generator: still different from each other, no longer reproducible one by one.
    """

    def __init__(self, start_engine: Callable[[], Any], *, per_request_seeds: bool = True) -> None:
        self.per_request_seeds = per_request_seeds
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="vllm-engine-loop", daemon=True
        )
        self._thread.start()
        self._ids = itertools.count()
        self._closed = False

        try:
            # On a thread with no event loop: ``AsyncLLM`` started inside a running loop ties
            # its output handler to that loop (the caller's, if it has one), and building it
            # blocks (imports, starting the core process), which a server's blocking-call guard
            # (``langgraph dev``) rejects in a loop's thread. The handler starts on this
            # worker's loop with the first request.
            self.engine = _on_a_new_thread(start_engine)
        except BaseException:
            self._loop.call_soon_threadsafe(self._loop.stop)
            raise
        self.tokenizer = self.engine.get_tokenizer()

    @property
    def dead(self) -> bool:
        """Whether this worker can no longer serve: shut down, or its engine core died."""
        return self._closed or bool(getattr(self.engine, "errored", False))

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self._schedule(coroutine).result()

    def _schedule(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        if self._closed:  # the loop no longer runs: the future would never resolve
            coroutine.close()
            raise RuntimeError("this engine was shut down; start a new one (get_engine)")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def submit(self, prompt_token_ids: list[int], params: Any) -> Future[Any]:
        """Queue one request; the future resolves to its final ``vllm.RequestOutput``.

        Cancelling the future (a caller's timeout) aborts the request in the engine.
        """
        from vllm.sampling_params import RequestOutputKind

        params.output_kind = RequestOutputKind.FINAL_ONLY
        if not self.per_request_seeds:
            params.seed = None
        return self._schedule(self._generate(prompt_token_ids, params, f"lgp-{next(self._ids)}"))

    def stream(
        self, prompt_token_ids: list[int], params: Any, on_output: Callable[[Any], None]
    ) -> Future[Any]:
        """Queue one request whose new tokens go to ``on_output`` as they are decoded.

        ``on_output`` gets each ``vllm.RequestOutput`` holding only the tokens decoded since the
        last one (on the worker's thread: hand them over, do not block); the future resolves
        when the request ends. Cancelling it aborts the request.
        """
        from vllm.sampling_params import RequestOutputKind

        params.output_kind = RequestOutputKind.DELTA
        if not self.per_request_seeds:
            params.seed = None
        request = f"lgp-{next(self._ids)}"
        return self._schedule(self._deltas(prompt_token_ids, params, request, on_output))

    async def _deltas(
        self,
        prompt_token_ids: list[int],
        params: Any,
        request_id: str,
        on_output: Callable[[Any], None],
    ) -> None:
        async for output in self.engine.generate(
            {"prompt_token_ids": prompt_token_ids}, params, request_id
        ):
            on_output(output)

    async def _generate(self, prompt_token_ids: list[int], params: Any, request_id: str) -> Any:
        final = None
        async for output in self.engine.generate(
            {"prompt_token_ids": prompt_token_ids}, params, request_id
        ):
            final = output
        return final

    def reset_prefix_cache(self) -> bool:
        """Empty the prefix cache; ``False`` (nothing done) while requests are running."""

        async def reset() -> bool:
            return bool(await self.engine.reset_prefix_cache())

        return self._call(reset())

    def shutdown(self) -> None:
        """Stop the engine (and its core process) and the loop; later calls raise. Idempotent."""

        async def stop() -> None:
            # The output handler first: it would log the core's exit as an engine failure.
            handler = getattr(self.engine, "output_handler", None)
            if handler is not None:
                handler.cancel()
            self.engine.shutdown()

        if self._closed:
            return
        self._call(stop())
        self._closed = True
        self._loop.call_soon_threadsafe(self._loop.stop)
        # Let the engine go now, while modules are intact: its ``__del__`` shuts down again,
        # which at interpreter teardown fails with "'NoneType' object is not callable".
        self.engine = None


def _on_a_new_thread(func: Callable[[], T]) -> T:
    """Return ``func()`` run on a thread of its own (one without an event loop).

    Not a ``ThreadPoolExecutor``: its work item and future keep the result referenced after the
    call, and an engine still referenced at interpreter exit is shut down again by its
    ``__del__`` when vLLM's modules are gone ("'NoneType' object is not callable").
    """
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(func())
        except BaseException as exc:  # handed to the caller below
            box.append(exc)

    thread = threading.Thread(target=run, name="vllm-engine-start")
    thread.start()
    thread.join()
    result = box.pop()
    if isinstance(result, BaseException):
        raise result
    return cast(T, result)
