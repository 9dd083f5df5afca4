"""Fault injection for the reliability experiment: a fuzzing chat model and a flaky searcher.

:class:`FuzzChatModel` replays or fuzzes model outputs and raises at a seeded rate;
:class:`FlakySearcher` fails searches in every way a real one can (raise, time out, return
nothing or garbage). Both are seeded, so the reliability table repeats exactly; the unit tests
use them too (``tests/fakes.py``).
"""

from __future__ import annotations

import random
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from pydantic import PrivateAttr

from langgraph_parallel.models.one_reply import OneReplyChatModel
from langgraph_parallel.retrieval.documents import Passage

__all__ = [
    "FRAGMENTS",
    "MODEL_FAULTS",
    "NASTY",
    "FlakySearcher",
    "FuzzChatModel",
    "fake_logprobs",
    "fuzz_step",
]


class FuzzChatModel(OneReplyChatModel):
    """Replays ``outputs`` in a cycle; a ``fail_rate`` share of calls raise ``error()`` instead.

    Items are a str, an AIMessage (e.g. with tool calls) or an Exception to raise. Failures are
    drawn from a seeded generator so a run repeats; :meth:`reset` starts a new script, so one
    graph can serve many generated cases.
    """

    outputs: list[Any] = ["<answer> x </answer>"]
    fail_rate: float = 0.0
    logprobs: bool = False
    """Attach OpenAI-style token logprobs (seeded by the text), so ParallelMuse can fork."""
    error: Callable[[], Exception] = lambda: ConnectionError("injected model fault")
    seed: int = 0
    _index: int = PrivateAttr(default=0)
    _failures: int = PrivateAttr(default=0)
    _rng: random.Random = PrivateAttr(default_factory=random.Random)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def model_post_init(self, context: Any, /) -> None:
        """Seed the fault draws from ``seed``."""
        self._rng.seed(self.seed)

    @property
    def failures(self) -> int:
        """Faults raised so far: injected at ``fail_rate`` or scripted as exceptions."""
        return self._failures

    def reset(self, outputs: Sequence[Any], *, fail_rate: float | None = None) -> None:
        """Start a new script (and, if given, a new fault rate); the fault draws go on."""
        with self._lock:
            self.outputs = list(outputs)
            self._index = 0
            if fail_rate is not None:
                self.fail_rate = fail_rate

    def respond(
        self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any
    ) -> AIMessage:
        """Return the script's next output, or raise (a drawn fault or a scripted exception)."""
        with self._lock:
            fail = self._rng.random() < self.fail_rate
            self._failures += fail
            # An injected fault does not use up the script: the retry gets the same output.
            item = self.outputs[self._index % len(self.outputs)] if self.outputs else ""
            self._index += not fail
        if fail:
            raise self.error()
        if isinstance(item, Exception):
            with self._lock:
                self._failures += 1
            raise item
        message = item if isinstance(item, AIMessage) else AIMessage(content=str(item))
        if self.logprobs:
            content = fake_logprobs(str(message.content))
            metadata = {**message.response_metadata, "logprobs": {"content": content}}
            message = message.model_copy(update={"response_metadata": metadata})
        return message


def fake_logprobs(text: str, width: int = 4) -> list[dict[str, Any]]:
    """Token logprobs for ``text`` cut into ``width``-character tokens, seeded by the text."""
    rng = random.Random(zlib.crc32(text.encode("utf-8", "surrogatepass")))
    out = []
    for start in range(0, len(text), width):
        top = sorted((-rng.uniform(0.01, 4.0) for _ in range(4)), reverse=True)
        out.append(
            {
                "token": text[start : start + width],
                "logprob": top[0],
                "top_logprobs": [{"token": f"t{i}", "logprob": lp} for i, lp in enumerate(top)],
            }
        )
    return out


class FlakySearcher:
    """A searcher that misbehaves on a seeded ``fail_rate`` share of calls.

    ``modes`` picks how a failing call misbehaves (cycled through in order): ``transient``
    raises ConnectionError, ``fatal`` raises RuntimeError, ``empty`` returns no passages,
    ``slow`` sleeps ``delay`` seconds first, ``garbage`` returns objects that are not passages.
    """

    def __init__(
        self,
        fail_rate: float = 0.3,
        *,
        modes: Sequence[str] = ("transient",),
        seed: int = 0,
        delay: float = 0.05,
        text: Callable[[str], str] = lambda q: f"Text about {q}.",
    ) -> None:
        self.fail_rate = fail_rate
        self.modes = list(modes)
        self.delay = delay
        self.text = text
        self.calls = 0
        self.failures: dict[str, int] = {}
        self._rng = random.Random(seed)
        self._modes = 0
        self._lock = threading.Lock()

    def reseed(self, seed: int = 0) -> None:
        """Restart the fault sequence, so a case behaves the same whatever ran before it."""
        with self._lock:
            self._rng = random.Random(seed)
            self._modes = 0

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        """Return one made-up passage per query, unless this call is drawn to misbehave."""
        with self._lock:
            self.calls += 1
            mode = None
            if self._rng.random() < self.fail_rate:
                mode = self.modes[self._modes % len(self.modes)]
                self._modes += 1
                self.failures[mode] = self.failures.get(mode, 0) + 1
        if mode == "transient":
            raise ConnectionError("injected search fault")
        if mode == "fatal":
            raise RuntimeError("injected search bug")
        if mode == "empty":
            return [[] for _ in queries]
        if mode == "garbage":
            return [None for _ in queries]  # type: ignore[misc]
        if mode == "slow":
            time.sleep(self.delay)
        return [[Passage(id=q, title=f"Title {q}", text=self.text(q))][:k] for q in queries]


NASTY = ["\x00", "\ud800", "\udfff", "\x1b[31m", "\u202e", "\r", "\x0b", "\ufeff", "\U0001f600"]
FRAGMENTS = [
    *["<search>", "</search>", "<answer>", "</answer>", "<think>", "</think>", "<tool_call>"],
    *["</tool_call>", "<information>", "</information>", "##", " ## ", "<", "</", "q", "Paris"],
    *["<search></search>", "<search> ## </search>", "<answer></answer>", "{", '{"name": "search"'],
    '<tool_call>{"name": "search", "arguments": {"query_list": ["a", "b"]}}</tool_call>',
    '<tool_call>{"name": "answer", "arguments": {"answer": "x"}}</tool_call>',
    *NASTY,
]
MODEL_FAULTS = [
    ValueError("prompt is longer than the maximum model length"),
    ConnectionError("connection reset"),
    RuntimeError("engine died"),
]


def fuzz_step(rng: random.Random) -> Any:
    """Return one random model output (text, AIMessage with tool calls) or a fault to raise.

    The families of ``tests/unit/test_reliability_graph_fuzz.py`` (tag soup, hundreds of ``##``
    or sub-queries, huge text, broken tool calls, control characters and lone surrogates),
    drawn from ``rng`` for code that cannot use Hypothesis (the reliability experiment).
    """
    kind = rng.random()
    if kind < 0.55:
        return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(0, 30)))
    if kind < 0.7:
        n = rng.randint(50, 500)
        return rng.choice(
            [
                "<search> " + " ## ".join(f"q{i}" for i in range(n)) + " </search>",
                "<search> a " + "##" * n + " b </search>",
                "x" * (n * 200) + "<answer> y </answer>",
                "<search>" * n,
            ]
        )
    if kind < 0.85:
        args = rng.choice([{"query": "a"}, {"query_list": ["a", 3, None]}, {"answer": ""}, {}])
        return AIMessage(
            content=rng.choice(FRAGMENTS),
            tool_calls=[{"name": rng.choice(["search", "answer", "x"]), "args": args, "id": "1"}],
            invalid_tool_calls=[{"name": "search", "args": '{"query": [', "id": "2", "error": "x"}],
        )
    if kind < 0.93:
        return rng.choice(MODEL_FAULTS)
    return "".join(chr(rng.randint(0, 0x2FFF)) for _ in range(rng.randint(0, 40)))
