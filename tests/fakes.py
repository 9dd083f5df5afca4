"""Fakes for unit tests: chat models that replay or fuzz outputs, and searchers.

``ScriptedChatModel`` and ``CountingSearcher`` script one run; ``FuzzChatModel`` and
``FlakySearcher`` inject faults at a seeded rate for the reliability tests and
``tools/bench_reliability.py``.
"""

from __future__ import annotations

import math
import random
import threading
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from pydantic import PrivateAttr

from langgraph_parallel.models.sampling import ConfigurableSampling
from langgraph_parallel.retrieval.documents import Passage


class ScriptedChatModel(BaseChatModel):
    """Replays ``script`` one output per call (str or AIMessage), recording every prompt."""

    script: list[Any]
    usage: dict[str, int] = {"input_tokens": 10, "output_tokens": 5, "cache_read": 2}
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _kwargs: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> list[list[BaseMessage]]:
        return self._calls

    @property
    def call_kwargs(self) -> list[dict[str, Any]]:
        return self._kwargs

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        with self._lock:
            index = len(self._calls)
            self._calls.append(list(messages))
            self._kwargs.append({"stop": stop, **kwargs})
        item = self.script[min(index, len(self.script) - 1)]
        if isinstance(item, Exception):
            raise item
        message = item if isinstance(item, AIMessage) else AIMessage(content=str(item))
        message = message.model_copy(
            update={
                "usage_metadata": {
                    "input_tokens": self.usage["input_tokens"],
                    "output_tokens": self.usage["output_tokens"],
                    "total_tokens": self.usage["input_tokens"] + self.usage["output_tokens"],
                    "input_token_details": {"cache_read": self.usage["cache_read"]},
                }
            }
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


class ToolCallingChatModel(ScriptedChatModel):
    """A :class:`ScriptedChatModel` that ``create_agent`` can bind tools to.

    ``bind_tools`` binds the tool names and ``tool_choice`` as call options, so each call's
    ``call_kwargs`` show what the agent bound (``tools``, ``tool_choice``).
    """

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        names = [getattr(tool, "name", None) for tool in tools]
        return self.bind(tools=names, tool_choice=tool_choice, **kwargs)


def search_call(args: Any, call_id: str = "call_1", name: str = "search") -> AIMessage:
    """An assistant message with one tool call (``args`` as the model sent them)."""
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


class CountingSearcher:
    """Returns one passage per query titled after it; counts queries; can fail on demand."""

    def __init__(self, fail: Callable[[str], Exception | None] | None = None) -> None:
        self.queries: list[str] = []
        self.batches: list[list[str]] = []
        self.fail = fail
        self._lock = threading.Lock()

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        with self._lock:
            self.queries.extend(queries)
            self.batches.append(list(queries))
        out = []
        for q in queries:
            error = self.fail(q) if self.fail else None
            if error is not None:
                raise error
            out.append([Passage(id=q, title=f"Title {q}", text=f"Text about {q}.")][:k])
        return out


class FuzzChatModel(BaseChatModel):
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
        self._rng.seed(self.seed)

    @property
    def _llm_type(self) -> str:
        return "fuzz"

    @property
    def failures(self) -> int:
        """Faults raised so far: injected at ``fail_rate`` or scripted as exceptions."""
        return self._failures

    def reset(self, outputs: Sequence[Any], *, fail_rate: float | None = None) -> None:
        with self._lock:
            self.outputs = list(outputs)
            self._index = 0
            if fail_rate is not None:
                self.fail_rate = fail_rate

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
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
        return ChatResult(generations=[ChatGeneration(message=message)])


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
    drawn from ``rng`` for scripts that cannot use Hypothesis (``tools/bench_reliability.py``).
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


def step_logprobs(text: str, spread: Mapping[str, int] | None = None) -> list[dict[str, Any]]:
    """Three-character tokens of ``text``; one starting in region r has a flat top-m (m=spread[r]).

    A flat top-m distribution scores exactly m in both modes (entropy and perplexity), so a test
    sets each region's uncertainty directly. Regions are :func:`region_spans`'s.
    """
    from langgraph_parallel.parallel_muse.regions import region_spans

    spans = region_spans(text)
    out = []
    for start in range(0, len(text), 3):
        m = next(
            (n for r, n in (spread or {}).items() if any(s <= start < e for s, e in spans[r])), 1
        )
        top = [{"token": f"c{i}", "logprob": -math.log(m)} for i in range(m)]
        out.append({"token": text[start : start + 3], "logprob": -math.log(m), "top_logprobs": top})
    return out


def agent_reply(
    think: str,
    *,
    queries: Sequence[str] = (),
    answer: str | None = None,
    spread: Mapping[str, int] | None = None,
    call_id: str = "call_1",
    logprobs: bool = True,
) -> AIMessage:
    """A reply as ``ChatVLLM`` bound to tools gives it: a ``search`` call or the answer.

    The step text (``<think>`` then ``<search>`` or ``<answer>``) is in ``response_metadata``
    with its token logprobs (:func:`step_logprobs`), as the engine decoded it.
    """
    action = (
        f"<answer> {answer} </answer>"
        if answer is not None
        else (f"<search> {' ## '.join(queries)} </search>")
    )
    text = f"<think> {think} </think>\n{action}"
    metadata: dict[str, Any] = {"step_text": text}
    if logprobs:
        metadata["logprobs"] = {"content": step_logprobs(text, spread)}
    calls = (
        []
        if answer is not None
        else [{"name": "search", "args": {"query_list": list(queries)}, "id": call_id}]
    )
    return AIMessage(
        content=answer or "",
        tool_calls=calls,
        additional_kwargs={"reasoning_content": think},
        response_metadata=metadata,
    )


class SeededAgentModel(ConfigurableSampling):
    """A tool-calling model replying ``reply(seed, step)``, ``step`` the AI messages so far.

    The seed is the run's (``sampling_seed`` in its config, as ``ChatVLLM`` reads it), so
    concurrent branches of one ParallelMuse run are deterministic. ``reply`` returns an
    ``AIMessage`` (see :func:`agent_reply`) or an exception to raise. Every call is recorded
    with its seed, temperature and messages.
    """

    reply: Callable[[Any, int], Any]
    usage: dict[str, int] = {"input_tokens": 100, "output_tokens": 10, "cache_read": 60}
    _calls: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "seeded-agent"

    @property
    def calls(self) -> list[dict[str, Any]]:
        return self._calls

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        names = [getattr(tool, "name", None) for tool in tools]
        return self.bind(tools=names, tool_choice=tool_choice, **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        step = sum(isinstance(m, AIMessage) for m in messages)
        with self._lock:
            self._calls.append(
                {
                    "seed": kwargs.get("seed"),
                    "temperature": kwargs.get("temperature"),
                    "messages": list(messages),
                }
            )
        item = self.reply(kwargs.get("seed"), step)
        if isinstance(item, Exception):
            raise item
        usage = {
            "input_tokens": self.usage["input_tokens"],
            "output_tokens": self.usage["output_tokens"],
            "total_tokens": self.usage["input_tokens"] + self.usage["output_tokens"],
            "input_token_details": {"cache_read": self.usage["cache_read"]},
        }
        message = item.model_copy(update={"usage_metadata": usage})
        return ChatResult(generations=[ChatGeneration(message=message)])
