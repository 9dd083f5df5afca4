"""``ParallelSearchMiddleware``: ParallelSearch's three rules for ``create_agent`` in one.

With :func:`~.agent_tool.parallel_search_tool` it makes any tool-calling agent a ParallelSearch
agent::

    agent = create_agent(model, tools=[parallel_search_tool(index)],
                         middleware=[ParallelSearchMiddleware()])

It is the decomposition instruction, the turn limit that forces an answer and the counters,
each a middleware of its own in :mod:`.agent_middleware` (use those to keep only some of the
rules). The sub-query cap is the tool's: no middleware cuts a ``query_list``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.tools import BaseTool

from langgraph_parallel.parallel_search.agent_middleware import (
    MIN_LANGCHAIN,
    AgentMiddleware,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    ParallelSearchAgentState,
    SearchCountersMiddleware,
    SearchInstructionMiddleware,
    SearchTurnLimitMiddleware,
    ToolCallRequest,
    ToolResult,
    answer_only_choice,
)
from langgraph_parallel.parallel_search.agent_tool import ParallelSearchTool
from langgraph_parallel.parallel_search.renamed import RENAMED, renamed_keywords

__all__ = [
    "MIN_LANGCHAIN",
    "ParallelSearchAgentState",
    "ParallelSearchMiddleware",
    "SearchCountersMiddleware",
    "SearchInstructionMiddleware",
    "SearchTurnLimitMiddleware",
    "answer_only_choice",
]

_MIDDLEWARE_RENAMED = {old: RENAMED[old] for old in ("max_searches", "max_sub_queries")}
"""The middleware's old names of the graph's settings."""


class ParallelSearchMiddleware(AgentMiddleware[ParallelSearchAgentState, Any, Any]):
    """The instruction, the turn limit and the counters in one middleware (module docstring).

    ``create_agent(model, tools=[parallel_search_tool(index)],
    middleware=[ParallelSearchMiddleware()])`` is the same agent as ``middleware=[
    SearchInstructionMiddleware(), SearchTurnLimitMiddleware(max_turns=4),
    SearchCountersMiddleware()]``; use the parts to keep only some of the rules (the parts
    and this class are not meant to be combined: the counts would be taken twice).

    Args:
        max_turns: Searches since the last user message after which the model must answer
            (:class:`SearchTurnLimitMiddleware`); ``None``: no limit (the agent's
            ``recursion_limit`` still ends a run).
        instruction: The text added to the system prompt (:class:`SearchInstructionMiddleware`).
        tool_name: The search tool's name.
        **deprecated: The old names, for one release with a ``DeprecationWarning``:
            ``max_searches`` (``max_turns``), and ``max_sub_queries`` (the cap is the tool's:
            ``parallel_search_tool(..., max_parallel_queries=...)``; given here, it still runs
            a :class:`~.agent_tool.ParallelSearchTool` under that cap, this release only).

    Raises:
        ValueError: ``max_turns`` below 1.
    """

    state_schema = ParallelSearchAgentState

    def __init__(
        self,
        *args: int,
        max_turns: int | None = 4,
        instruction: str | None = None,
        tool_name: str = "search",
        **deprecated: Any,
    ) -> None:
        super().__init__()
        if args:  # the old first positional parameter, ``max_sub_queries``
            if len(args) > 1 or "max_sub_queries" in deprecated:
                raise TypeError("ParallelSearchMiddleware() takes keyword arguments only")
            deprecated = {"max_sub_queries": args[0], **deprecated}
        old = renamed_keywords(
            "ParallelSearchMiddleware",
            deprecated,
            _MIDDLEWARE_RENAMED,
            owners={"max_parallel_queries": "parallel_search_tool"},
        )
        max_turns = old.get("max_turns", max_turns)
        self.legacy_cap: int | None = old.get("max_parallel_queries")
        if self.legacy_cap is not None and self.legacy_cap < 1:
            raise ValueError("max_sub_queries must be at least 1.")
        self.tool_name = tool_name
        self.instruction = SearchInstructionMiddleware(instruction=instruction, tool_name=tool_name)
        self.turn_limit = (
            None
            if max_turns is None
            else SearchTurnLimitMiddleware(max_turns=max_turns, tool_name=tool_name)
        )
        self.counters = SearchCountersMiddleware(tool_name=tool_name)

    @property
    def max_turns(self) -> int | None:
        """The turn limit (``None``: none)."""
        return None if self.turn_limit is None else self.turn_limit.max_turns

    def model_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """Return ``request`` as the instruction and the turn limit send it."""
        if self.legacy_cap is not None:
            request = request.override(tools=[self._legacy(tool) for tool in request.tools])
        request = self.instruction.model_request(request)
        return request if self.turn_limit is None else self.turn_limit.model_request(request)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ExtendedModelResponse[Any]:
        """Call the model with the instruction (and the turn limit); count the call."""
        return self.counters.wrap_model_call(self.model_request(request), handler)

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ExtendedModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        return await self.counters.awrap_model_call(self.model_request(request), handler)

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """Run the call and move a search's counters into the state."""
        return self.counters.wrap_tool_call(self._legacy_call(request), handler)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Async :meth:`wrap_tool_call`."""
        return await self.counters.awrap_tool_call(self._legacy_call(request), handler)

    # The deprecated ``max_sub_queries`` (this release only): the tool runs under it, and the
    # instruction reads it off the tool; the cap is still the tool's to apply.
    def _legacy(self, tool: Any) -> Any:
        if self.legacy_cap is None or not isinstance(tool, ParallelSearchTool):
            return tool
        if tool.name != self.tool_name:
            return tool
        return tool.model_copy(update={"max_parallel_queries": self.legacy_cap})

    def _legacy_call(self, request: ToolCallRequest) -> ToolCallRequest:
        tool = request.tool
        if self.legacy_cap is None or not isinstance(tool, BaseTool):
            return request
        return request.override(tool=self._legacy(tool))
