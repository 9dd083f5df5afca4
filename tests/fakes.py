"""Fakes for unit tests: chat models that replay or fuzz outputs, and searchers.

``ScriptedChatModel`` and ``CountingSearcher`` script one run; ``FuzzChatModel`` and
``FlakySearcher`` inject faults at a seeded rate for the reliability tests and the reliability
experiment, which ships them (``lab.experiments.reliability.faults``).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from pydantic import PrivateAttr

from lab.experiments.reliability.faults import (  # noqa: F401  (re-exported for tests)
    FRAGMENTS,
    MODEL_FAULTS,
    NASTY,
    FlakySearcher,
    FuzzChatModel,
    fake_logprobs,
    fuzz_step,
)
from langgraph_parallel.models.one_reply import OneReplyChatModel
from langgraph_parallel.models.sampling import ConfigurableSampling
from langgraph_parallel.retrieval.documents import Passage


class ScriptedChatModel(OneReplyChatModel):
    """Replays ``script`` one output per call (str or AIMessage), recording every prompt."""

    script: list[Any]
    usage: dict[str, int] = {"input_tokens": 10, "output_tokens": 5, "cache_read": 2}
    _calls: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _kwargs: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def calls(self) -> list[list[BaseMessage]]:
        return self._calls

    @property
    def call_kwargs(self) -> list[dict[str, Any]]:
        return self._kwargs

    def respond(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> AIMessage:
        with self._lock:
            index = len(self._calls)
            self._calls.append(list(messages))
            self._kwargs.append({"stop": stop, **kwargs})
        item = self.script[min(index, len(self.script) - 1)]
        if isinstance(item, Exception):
            raise item
        message = item if isinstance(item, AIMessage) else AIMessage(content=str(item))
        return message.model_copy(
            update={
                "usage_metadata": {
                    "input_tokens": self.usage["input_tokens"],
                    "output_tokens": self.usage["output_tokens"],
                    "total_tokens": self.usage["input_tokens"] + self.usage["output_tokens"],
                    "input_token_details": {"cache_read": self.usage["cache_read"]},
                }
            }
        )


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


class SeededAgentModel(ConfigurableSampling, OneReplyChatModel):
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
    def calls(self) -> list[dict[str, Any]]:
        return self._calls

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any
    ) -> Runnable[Any, AIMessage]:
        names = [getattr(tool, "name", None) for tool in tools]
        return self.bind(tools=names, tool_choice=tool_choice, **kwargs)

    def respond(self, messages: list[BaseMessage], stop: Any, **kwargs: Any) -> AIMessage:
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
        return item.model_copy(update={"usage_metadata": usage})


_DOOR_OPTIONS = (
    "retry_policy",
    "checkpointer",
    "store",
    "name",
    "model",
    "agent_config",
    "keep_threads",
)
"""Keywords of create_parallel_muse_graph itself; the helpers put every other one in the context."""


def _door(options: dict[str, Any]) -> dict[str, Any]:
    return {key: options.pop(key) for key in _DOOR_OPTIONS if key in options}


def muse_graph(model: BaseChatModel, search: Any, **options: Any) -> Any:
    """ParallelMuse over the ParallelSearch loop through the one door, settings given flat."""
    from langgraph_parallel import MuseContext, create_parallel_muse_graph, parallel_search_rollouts

    door = _door(options)
    budget = options.pop("passage_sentences", "auto")
    rollouts = parallel_search_rollouts(model, search, passage_sentences=budget)
    return create_parallel_muse_graph(rollouts, context=MuseContext(**options), **door)


def rollouts_graph(model: BaseChatModel, search: Any, **options: Any) -> Any:
    """The independent-rollouts baseline through the one door, settings given flat."""
    from langgraph_parallel import (
        create_parallel_muse_graph,
        independent_rollouts,
        parallel_search_rollouts,
    )

    door = {"name": "rollouts", **_door(options)}
    budget = options.pop("passage_sentences", "auto")
    rollouts = parallel_search_rollouts(model, search, passage_sentences=budget)
    return create_parallel_muse_graph(rollouts, context=independent_rollouts(**options), **door)


def muse_agent(agent: Any, **options: Any) -> Any:
    """ParallelMuse over a checkpointed agent through the one door, settings given flat."""
    from langgraph_parallel import MuseContext, create_parallel_muse_graph

    door = _door(options)
    join = "select" if door.get("model") is not None else "majority"
    context = MuseContext(**{"join": join, **options})
    return create_parallel_muse_graph(agent, context=context, **door)
