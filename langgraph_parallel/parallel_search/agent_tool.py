"""ParallelSearch as one LangChain tool, for ``create_agent`` and any tool-calling agent.

The graph's fan-out in one tool call: ``search`` takes ``query_list``, one or more independent
sub-queries, searches them together in one batched retrieval (one ``batch_search``, through the
graph's :class:`~langgraph_parallel.retrieval.batching.SearchBatcher`) and answers with one
observation. The turn is the graph's, driven by the same object
(:class:`~.turn.SearchTurn`: the cap, the repeats, the errors, the dedupe, the observation, the
counters), so a trained policy reads byte for byte what the graph shows it.

Why a ``BaseTool`` with a JSON-schema ``args_schema``: the model is shown a list of strings, but
nothing validates before the tool runs, so every shape other providers send reaches
:func:`~langgraph_parallel.protocol.search_queries` (a list, one string split on ``##``, a
JSON-encoded list) and a malformed call is answered with text saying what to send
(:data:`~langgraph_parallel.prompts.SEARCH_CALL_ERROR`), not an exception. The settings are
the graph's, under the graph's names (``top_k``, ``max_parallel_queries``, ``search_timeout``);
the cap is the tool's alone (:class:`~.middleware.ParallelSearchMiddleware` tells the model the
tool's number and cuts nothing itself).

Inside an agent the tool also reads the conversation (langgraph's ``ToolRuntime``, injected as
``runtime``; the model never sees it): a sub-query an earlier search of the conversation ran is
not searched again, as in the graph's loop (:func:`~.turn.repeated`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import uuid
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langchain_core.tools.base import ArgsSchema
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, SkipValidation, model_validator

from langgraph_parallel.agent.checks import check_search_timeout
from langgraph_parallel.agent.searches import searches_since_question, tool_searches
from langgraph_parallel.errors import reported_error
from langgraph_parallel.parallel_search.context import SearchContext
from langgraph_parallel.parallel_search.renamed import RENAMED, renamed_keywords
from langgraph_parallel.parallel_search.turn import (
    REPEATED,
    SEARCH_POOL,
    Outcome,
    SearchTurn,
    TurnStart,
    failed,
    timed_out,
)
from langgraph_parallel.prompts import SEARCH_CALL_ERROR, SEARCH_TOOL_DESCRIPTION
from langgraph_parallel.protocol import DEFAULT_MAX_PARALLEL_QUERIES, search_queries
from langgraph_parallel.retrieval.batching import SearchBatcher
from langgraph_parallel.retrieval.documents import Passage
from langgraph_parallel.retrieval.search import SearchSource, as_searcher

__all__ = ["QUERY_LIST_SCHEMA", "ParallelSearchTool", "parallel_search_tool"]

QUERY_LIST_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query_list": {
            "type": "array",
            "items": {"type": "string"},
            "description": "One or more search queries; independent ones are searched in parallel.",
        }
    },
    "required": ["query_list"],
}
"""The arguments the model is shown: ``{"query_list": ["...", ...]}``."""

_TOOL_RENAMED = {old: RENAMED[old] for old in ("k", "max_sub_queries", "timeout")}
"""The tool's old names of the graph's settings."""


class _Injected(BaseModel):
    """The input schema tool runners inspect: ``runtime`` (by its name) is injected by them."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)
    query_list: Any = None
    runtime: Any = None


@dataclass(frozen=True)
class _Call:
    """A call's turn under way: its start and its searches.

    ``futures`` has one entry per sub-query of ``start.queries``: ``None`` for a repeat, not
    searched.
    """

    turn: SearchTurn
    start: TurnStart
    futures: list[concurrent.futures.Future[list[Passage]] | None]


class ParallelSearchTool(BaseTool):
    """The ``search`` tool: sub-queries in, one ``<information>`` observation out.

    The content is the observation; the ``artifact`` (``response_format="content_and_artifact"``)
    holds ``counters``, the graph's turn counters (:meth:`~.turn.SearchTurn.finish`: ``turns``
    and ``searches`` 1, ``sub_queries``, ``parallel_turns``, ``first_turn_parallel`` (inside
    an agent: 1 when the question's first search step searched in parallel),
    ``search_errors`` when a search failed or timed out (each also logged as a warning), ...;
    a malformed call counts ``invalid_steps`` 1 and nothing else), the
    ``queries`` searched, the ``skipped`` ones over the cap, each sub-query's result ``titles``,
    its ``errors`` (``None`` when it worked) and ``duplicate_passages``. Build it with
    :func:`parallel_search_tool`.
    """

    name: str = "search"
    description: str = SEARCH_TOOL_DESCRIPTION
    args_schema: Annotated[ArgsSchema | None, SkipValidation()] = QUERY_LIST_SCHEMA
    response_format: Literal["content", "content_and_artifact"] = "content_and_artifact"
    searcher: Any
    """A :class:`~langgraph_parallel.retrieval.search.Searcher` or a LangChain retriever."""
    top_k: int = Field(default=3, ge=1)
    """Passages per sub-query."""
    max_parallel_queries: int = Field(default=DEFAULT_MAX_PARALLEL_QUERIES, ge=1)
    """Sub-queries searched per call; the rest are named in the observation, not searched.
    The tool is the one owner of this cap: the middleware's instruction states it."""
    passage_sentences: int | None = Field(default=None, ge=1)
    """Show each passage's title and first N sentences (``None``: whole passages)."""
    search_timeout: float = Field(default=60.0, gt=0)
    """Seconds before an unfinished sub-query is reported as timed out."""
    dedupe_passages: bool = False
    """List a passage that several sub-queries found once, under the one ranking it highest
    (:func:`~.turn.listed`); off by default, as in the graph the policies were trained on."""
    skip_repeats: bool = True
    """Inside an agent, answer a sub-query an earlier search of the conversation ran with
    :data:`~.turn.REPEATED` instead of searching it again, as the graph's loop does."""

    _batcher: SearchBatcher = PrivateAttr()

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        """Take the fields' old names (``k``, ``max_sub_queries``, ``timeout``) for one release."""
        if not isinstance(data, dict) or not set(data) & set(_TOOL_RENAMED):
            return data
        old = {key: data[key] for key in _TOOL_RENAMED if key in data}
        kept = {key: value for key, value in data.items() if key not in old}
        return {**kept, **renamed_keywords("ParallelSearchTool", old, _TOOL_RENAMED)}

    @property
    def settings(self) -> SearchContext:
        """The tool's settings as the turn reads them (the graph's settings type)."""
        return SearchContext(
            top_k=self.top_k,
            max_parallel_queries=self.max_parallel_queries,
            passage_sentences=self.passage_sentences,
            search_timeout=self.search_timeout,
            dedupe_passages=self.dedupe_passages,
            skip_repeats=self.skip_repeats,
        )

    def model_post_init(self, context: Any, /) -> None:
        """Adapt the searcher (a retriever is wrapped) and set up the batched search."""
        self._batcher = SearchBatcher(as_searcher(self.searcher), SEARCH_POOL)

    def get_input_schema(self, config: RunnableConfig | None = None) -> type[BaseModel]:
        """Return a schema naming ``runtime``, so an agent's tool node injects the conversation.

        The model never sees it: it is shown :data:`QUERY_LIST_SCHEMA`.
        """
        return _Injected

    def _run(self, **args: Any) -> tuple[str, dict[str, Any]]:
        call = self._start(args)
        if isinstance(call, tuple):
            return call
        concurrent.futures.wait([f for f in call.futures if f], timeout=self.search_timeout)
        return self._observe(call)

    async def _arun(self, **args: Any) -> tuple[str, dict[str, Any]]:
        call = self._start(args)
        if isinstance(call, tuple):
            return call
        # Awaited, not waited in a thread; on a timeout the unfinished ones are cancelled.
        futures = [asyncio.wrap_future(f) for f in call.futures if f]
        waiting = asyncio.gather(*futures, return_exceptions=True)
        with contextlib.suppress(asyncio.TimeoutError):  # not the builtin one before 3.11
            await asyncio.wait_for(waiting, self.search_timeout)
        return self._observe(call)

    def _start(self, args: dict[str, Any]) -> _Call | tuple[str, dict[str, Any]]:
        """Submit the call's sub-queries, or return the answer to a malformed call."""
        runtime = args.pop("runtime", None)
        queries, error = search_queries(args)
        if error is not None:
            text = SEARCH_CALL_ERROR.format(error=error, tool=self.name)
            return text, {"counters": {"invalid_steps": 1}, "error": error, "queries": []}
        turn = SearchTurn(self.settings)
        messages = self._messages(runtime)
        earlier = [s["query"] for s in tool_searches(messages)]
        # The state holds this call's own AI message: the question's first step is number 1.
        number = max(1, sum(n > 0 for n in searches_since_question(messages, self.name)))
        start = turn.start(queries, earlier, number=number)
        todo = len(start.todo)
        group = uuid.uuid4().hex  # they all arrive at once: one batch_search for the group
        futures = [
            None if again else self._batcher.submit(q, self.top_k, group=group, size=todo)
            for q, again in zip(start.queries, start.repeats, strict=True)
        ]
        return _Call(turn, start, futures)

    @staticmethod
    def _messages(runtime: Any) -> list[Any]:
        # An agent's conversation; a direct ``invoke`` has none.
        state = getattr(runtime, "state", None)
        messages = state.get("messages") if isinstance(state, dict) else None
        return list(messages or [])

    def _outcome(self, future: concurrent.futures.Future[list[Passage]] | None) -> Outcome:
        if future is None:
            return REPEATED
        if not future.done() or future.cancelled():
            future.cancel()
            return timed_out(self.search_timeout)
        exc = future.exception()
        if exc is None:
            return future.result()
        if not isinstance(exc, Exception):  # e.g. KeyboardInterrupt
            raise exc
        # The graph's rule: a UserError (a set-up problem) is raised, anything else reported.
        return failed(reported_error(exc))

    def _observe(self, call: _Call) -> tuple[str, dict[str, Any]]:
        end = call.turn.finish(call.start, [self._outcome(future) for future in call.futures])
        return end.observation, end.artifact(call.start)


def parallel_search_tool(
    search: SearchSource,
    top_k: int = 3,
    *,
    max_parallel_queries: int = DEFAULT_MAX_PARALLEL_QUERIES,
    passage_sentences: int | None = None,
    search_timeout: float = 60.0,
    dedupe_passages: bool = False,
    skip_repeats: bool = True,
    name: str = "search",
    **deprecated: Any,
) -> ParallelSearchTool:
    """Return ParallelSearch as a LangChain tool, named ``search``, for ``create_agent``.

    ``create_agent(model, tools=[parallel_search_tool(index)],
    middleware=[ParallelSearchMiddleware()])``; see :class:`ParallelSearchTool`.

    Args:
        search: A :class:`~langgraph_parallel.retrieval.search.Searcher` (e.g. ``CorpusIndex``,
            ``default_index()``) or any LangChain ``BaseRetriever``.
        top_k: Passages per sub-query.
        max_parallel_queries: Sub-queries searched per call; the rest are named in the
            observation as not searched (the tool owns this cap; ``ParallelSearchMiddleware``'s
            instruction tells the model the same number).
        passage_sentences: Show each passage's title and first N sentences; ``None``: whole
            passages. A trained policy should read the budget it was trained with: pass
            ``model.passage_sentences``.
        search_timeout: Seconds before an unfinished sub-query is reported as timed out.
        dedupe_passages: List a passage that several sub-queries found once, under the one
            that ranks it highest (fewer tokens; an observation the graph's policies were not
            trained on). ``False``, the default, gives exactly the graph's observation.
        skip_repeats: In an agent, do not search again a sub-query an earlier search of the
            conversation ran; the observation says so (the graph loop's rule, its
            ``skip_repeats``).
        name: The tool's name; the embedded policies call a tool named ``search``.
        **deprecated: The old names ``k``, ``max_sub_queries`` and ``timeout``, taken for one
            release with a ``DeprecationWarning`` (:mod:`.renamed`).

    Raises:
        UserError: ``search`` is neither a searcher nor a retriever, or ``search_timeout`` is
            not a number of seconds above 0. A searcher that returns anything but passages
            raises it at the first call.
        TypeError: A keyword that is neither a setting nor an old name of one.
    """
    settings: dict[str, Any] = {
        "top_k": top_k,
        "max_parallel_queries": max_parallel_queries,
        "search_timeout": search_timeout,
    }
    settings.update(renamed_keywords("parallel_search_tool", deprecated, _TOOL_RENAMED))
    check_search_timeout(settings["search_timeout"], "search_timeout")
    return ParallelSearchTool(
        name=name,
        searcher=search,
        passage_sentences=passage_sentences,
        **settings,
        dedupe_passages=dedupe_passages,
        skip_repeats=skip_repeats,
    )
