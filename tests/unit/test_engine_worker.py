"""EngineWorker's contract over a fake AsyncLLM: futures from any thread, errors, cancel, stop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from langgraph_parallel.errors import UserError
from langgraph_parallel.models import engine
from langgraph_parallel.models.worker import EngineWorker


class FakeAsyncLLM:
    """Answers each prompt with its token ids reversed, after ``steps`` awaits (engine steps)."""

    def __init__(self, steps: int = 3) -> None:
        self.steps = steps
        self.loop_thread: str | None = None
        self.cancelled: list[str] = []
        self.running = 0
        self.shut = False
        self.errored = False  # AsyncLLM's flag for a core process that is gone
        self.output_handler: asyncio.Task[None] | None = None
        self.release = asyncio.Event()

    def get_tokenizer(self) -> str:
        return "tokenizer"

    async def generate(
        self, prompt: dict[str, list[int]], params: Any, request_id: str
    ) -> AsyncIterator[Any]:
        self.loop_thread = threading.current_thread().name
        if prompt["prompt_token_ids"] == [666]:
            raise ValueError("prompt too long")
        self.running += 1
        try:
            if prompt["prompt_token_ids"] == [0]:  # a request that runs until cancelled
                await self.release.wait()
            for _ in range(self.steps):
                await asyncio.sleep(0.001)
            yield SimpleNamespace(request_id=request_id, ids=prompt["prompt_token_ids"][::-1])
        except asyncio.CancelledError:
            self.cancelled.append(request_id)
            raise
        finally:
            self.running -= 1

    async def reset_prefix_cache(self) -> bool:
        return self.running == 0

    def shutdown(self) -> None:
        self.shut = True


def test_calls_from_many_threads_each_get_their_own_final_output() -> None:
    fake = FakeAsyncLLM()
    worker = EngineWorker(lambda: fake)
    params = [SimpleNamespace() for _ in range(8)]
    with ThreadPoolExecutor(8) as pool:
        outputs = list(pool.map(lambda i: worker.submit([i, i + 1], params[i]).result(5), range(8)))
    assert [o.ids for o in outputs] == [[i + 1, i] for i in range(8)]
    assert len({o.request_id for o in outputs}) == 8
    # Only the final output is wanted: the engine is told so on every request.
    assert {p.output_kind.name for p in params} == {"FINAL_ONLY"}
    assert fake.loop_thread == "vllm-engine-loop" and worker.tokenizer == "tokenizer"
    worker.shutdown()


def test_a_failing_request_fails_its_own_future_only() -> None:
    worker = EngineWorker(FakeAsyncLLM)
    bad = worker.submit([666], SimpleNamespace())
    good = worker.submit([1, 2], SimpleNamespace())
    with pytest.raises(ValueError, match="prompt too long"):
        bad.result(5)
    assert good.result(5).ids == [2, 1]
    worker.shutdown()


def test_cancelling_a_future_aborts_its_request_in_the_engine() -> None:
    fake = FakeAsyncLLM()
    worker = EngineWorker(lambda: fake)
    stuck = worker.submit([0], SimpleNamespace())
    with pytest.raises(TimeoutError):
        stuck.result(timeout=0.05)
    assert worker.reset_prefix_cache() is False  # refused while a request runs
    stuck.cancel()
    for _ in range(100):
        if fake.cancelled:
            break
        threading.Event().wait(0.01)
    assert len(fake.cancelled) == 1 and fake.running == 0
    assert worker.reset_prefix_cache() is True
    worker.shutdown()


def test_after_shutdown_calls_raise_instead_of_hanging() -> None:
    fake = FakeAsyncLLM()
    worker = EngineWorker(lambda: fake)
    assert not worker.dead
    worker.shutdown()
    worker.shutdown()  # idempotent
    assert fake.shut and worker.dead
    with pytest.raises(RuntimeError, match="shut down"):
        worker.submit([1], SimpleNamespace())
    with pytest.raises(RuntimeError, match="shut down"):
        worker.reset_prefix_cache()


def test_an_engine_that_fails_to_start_raises_and_leaves_no_loop_running() -> None:
    def broken() -> None:
        raise RuntimeError("Engine core initialization failed")

    def new_loops() -> set[threading.Thread]:
        # Other tests' engines have loops of their own, which may start or end meanwhile: only
        # a loop thread that was not there before counts.
        return {t for t in threading.enumerate() if t.name == "vllm-engine-loop"} - before

    before: set[threading.Thread] = set()
    before = new_loops()
    with pytest.raises(RuntimeError, match="initialization failed"):
        EngineWorker(broken)
    for _ in range(100):
        if not new_loops():
            break
        threading.Event().wait(0.01)
    assert not new_loops()


def test_an_engine_that_fails_to_start_names_the_main_guard_for_unguarded_scripts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def broken(path: str, kwargs: dict[str, Any]) -> None:
        raise RuntimeError("Engine core initialization failed. See root cause above.")

    unguarded = tmp_path / "my_script.py"
    unguarded.write_text("graph.invoke({'question': 'q'})\n")
    guarded = tmp_path / "guarded.py"
    guarded.write_text("if __name__ == '__main__':\n    graph.invoke({'question': 'q'})\n")
    monkeypatch.setattr(engine, "_start_async_llm", broken)
    monkeypatch.setattr(engine, "_main_file", lambda: str(unguarded))
    monkeypatch.setattr(engine, "_START_METHOD_CHOSEN", "spawn")  # the user's choice
    with pytest.raises(UserError, match=r"my_script\.py has no .*__main__.* guard"):
        engine.get_engine("/nonexistent/model", {"some_setting": 2})
    # A guarded script, or no script at all (a notebook): vLLM's own error, untouched.
    for main in (str(guarded), None):
        monkeypatch.setattr(engine, "_main_file", lambda main=main: main)
        with pytest.raises(RuntimeError, match="initialization failed") as raised:
            engine.get_engine("/nonexistent/model", {"some_setting": 3})
        assert not isinstance(raised.value, UserError)
    # A forked core (the default) never imports the script: no guard to blame.
    monkeypatch.setattr(engine, "_START_METHOD_CHOSEN", None)
    monkeypatch.setattr(engine, "_main_file", lambda: str(unguarded))
    with pytest.raises(RuntimeError, match="initialization failed") as raised:
        engine.get_engine("/nonexistent/model", {"some_setting": 4})
    assert not isinstance(raised.value, UserError)


def test_a_worker_whose_engine_died_is_replaced_by_the_next_get_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    started: list[FakeAsyncLLM] = []

    def start(path: str, kwargs: dict[str, Any]) -> FakeAsyncLLM:
        started.append(FakeAsyncLLM())
        return started[-1]

    monkeypatch.setattr(engine, "_start_async_llm", start)
    monkeypatch.setattr(engine, "_ENGINES", {})
    first = engine.get_engine("/some/model", {"setting": 4})
    assert engine.get_engine("/some/model", {"setting": 4}) is first and len(started) == 1
    started[0].errored = True
    assert first.dead
    second = engine.get_engine("/some/model", {"setting": 4})
    assert second is not first and len(started) == 2 and started[0].shut
    assert second.submit([1, 2], SimpleNamespace()).result(5).ids == [2, 1]
    second.shutdown()


def test_seeds_reach_the_engine_only_where_it_can_rewind_them() -> None:
    worker = EngineWorker(FakeAsyncLLM, per_request_seeds=False)  # an engine on a CPU
    params = SimpleNamespace(seed=7)
    worker.submit([1, 2], params).result(5)
    assert params.seed is None
    worker.shutdown()
    worker = EngineWorker(FakeAsyncLLM)  # a GPU's
    params = SimpleNamespace(seed=7)
    worker.submit([1, 2], params).result(5)
    assert params.seed == 7
    worker.shutdown()
