"""``ParallelSearchMiddleware``: ParallelSearch's rules for a ``create_agent`` agent.

With :func:`~.agent_tool.parallel_search_tool` it makes any tool-calling agent a ParallelSearch
agent::

    agent = create_agent(model, tools=[parallel_search_tool(index)],
                         middleware=[ParallelSearchMiddleware()])

It uses the hooks that wrap calls (``wrap_model_call``, ``wrap_tool_call``), so it adds no node
to the agent's graph:

- **Instruction.** Every model call's system prompt gets the decomposition instruction
  (:data:`~langgraph_parallel.prompts.PARALLEL_SEARCH_TOOL_INSTRUCTION`), after the agent's own.
  (The embedded policies are shown their trained rules prompt instead; see
  :mod:`~langgraph_parallel.dialect.transcript`.)
- **Cap.** A ``search`` call runs at most ``max_sub_queries`` sub-queries; the rest are named in
  the observation as not searched, as the graph names them. The cap is applied by the tool, not
  by rewriting the model's message in ``after_model``: the transcript keeps what the model wrote,
  as the graph's does. A search tool that is not a :class:`~.agent_tool.ParallelSearchTool` gets
  its ``query_list`` cut and the same note appended to its result.
- **Turn limit.** After ``max_searches`` searches since the last user message, the model is
  called with a ``tool_choice`` that allows no tool call (``"none"``; Anthropic's
  ``{"type": "none"}``): it must answer, as the graph's final answer-only step (the embedded
  policies then decode with the answer-only grammar).
- **Counters.** The agent's state gets ``counters`` under the graph's names: ``llm_calls`` and
  the token counts of every model call, ``turns``/``searches``/``sub_queries``/
  ``parallel_turns`` of every search (from the tool's artifact).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, NotRequired

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.types import Command

from langgraph_parallel.agent.state import add_counters
from langgraph_parallel.errors import UserError, install_hint
from langgraph_parallel.models.usage import usage_counters
from langgraph_parallel.parallel_search.agent_tool import ParallelSearchTool
from langgraph_parallel.prompts import PARALLEL_SEARCH_TOOL_INSTRUCTION
from langgraph_parallel.protocol import DEFAULT_MAX_PARALLEL_QUERIES, skipped_note


def _missing_langchain(exc: ImportError) -> str:
    """Say which fix an ImportError of langchain's middleware names: install, or upgrade."""
    try:
        from importlib.metadata import PackageNotFoundError, version

        installed = version("langchain")
    except PackageNotFoundError:
        return f"ParallelSearchMiddleware needs langchain's create_agent: {install_hint('agents')}."
    return (
        f"ParallelSearchMiddleware needs langchain>={MIN_LANGCHAIN} (its middleware's "
        f"ExtendedModelResponse); langchain {installed} is installed ({exc}): "
        f"`pip install -U 'langchain>={MIN_LANGCHAIN}'`."
    )


MIN_LANGCHAIN = "1.2.9"
"""The first langchain whose middleware has ``ExtendedModelResponse`` (checked: 1.2.8 lacks
it; this module's tests pass on 1.2.9)."""

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ExtendedModelResponse,
        ModelRequest,
        ModelResponse,
        ToolCallRequest,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise UserError(_missing_langchain(exc)) from exc

__all__ = ["ParallelSearchAgentState", "ParallelSearchMiddleware"]

ToolResult = ToolMessage | Command[Any]


class ParallelSearchAgentState(AgentState[Any]):
    """The agent's state with the graph's ``counters`` (summed over the thread's runs)."""

    counters: NotRequired[Annotated[dict[str, int], add_counters]]


_ANSWER_ONLY = {"anthropic-chat": {"type": "none"}}
"""``tool_choice`` that allows no tool call, for the chat models that do not read ``"none"`` so.
``ChatAnthropic.bind_tools`` (langchain-anthropic 1.7) turns every string but ``"any"`` and
``"auto"`` into a forced call of the tool of that name, so ``"none"`` would force a call of a tool
named ``none`` and the API would refuse the request; the Anthropic API's own form is a dict.
OpenAI, Google (``FunctionCallingConfig`` mode ``NONE``) and our vLLM chat models take ``"none"``;
``test_agent_tool`` checks each provider class's own request payload. The tool stays declared
rather than being removed from the request: the transcript still holds its calls and results,
and a request with tool calls but no tool declared is not well-formed for every provider."""


def answer_only_choice(model: Any) -> str | dict[str, str]:
    """Return the ``tool_choice`` with which ``model`` may call no tool (must answer)."""
    provider = model._llm_type if isinstance(model, BaseChatModel) else ""
    return _ANSWER_ONLY.get(provider, "none")


class ParallelSearchMiddleware(AgentMiddleware[ParallelSearchAgentState, Any, Any]):
    """Decomposition instruction, sub-query cap, turn limit and counters (module docstring).

    Args:
        max_sub_queries: Sub-queries searched per ``search`` call.
        max_searches: Searches since the last user message after which the model must answer;
            ``None``: no limit (the agent's ``recursion_limit`` still ends a run).
        instruction: The text added to the system prompt (``{tool}`` and ``{max_sub_queries}``
            are filled in); ``None``:
            :data:`~langgraph_parallel.prompts.PARALLEL_SEARCH_TOOL_INSTRUCTION`.
        tool_name: The search tool's name.

    Raises:
        ValueError: ``max_sub_queries`` or ``max_searches`` below 1.
    """

    state_schema = ParallelSearchAgentState

    def __init__(
        self,
        max_sub_queries: int = DEFAULT_MAX_PARALLEL_QUERIES,
        *,
        max_searches: int | None = 4,
        instruction: str | None = None,
        tool_name: str = "search",
    ) -> None:
        super().__init__()
        if max_sub_queries < 1 or (max_searches is not None and max_searches < 1):
            raise ValueError("max_sub_queries and max_searches must be at least 1.")
        self.max_sub_queries = max_sub_queries
        self.max_searches = max_searches
        self.tool_name = tool_name
        template = instruction or PARALLEL_SEARCH_TOOL_INSTRUCTION
        self.instruction = template.format(tool=tool_name, max_sub_queries=max_sub_queries)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ExtendedModelResponse[Any]:
        """Call the model with the instruction (and the turn limit); count the call."""
        return _counted(handler(self.model_request(request)))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ExtendedModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        return _counted(await handler(self.model_request(request)))

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """Run a search under the cap and move its counters into the state."""
        capped, dropped = self.tool_request(request)
        return self._counted_tool(handler(capped), dropped, self._first_search(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Async :meth:`wrap_tool_call`."""
        capped, dropped = self.tool_request(request)
        return self._counted_tool(await handler(capped), dropped, self._first_search(request))

    def model_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """Return ``request`` with the instruction, and no tool call allowed past the limit."""
        system = request.system_message
        overrides: dict[str, Any] = {}
        if system is None:
            overrides["system_message"] = SystemMessage(self.instruction)
        elif self.instruction not in system.text:  # not added already (by another instance)
            addition = f"\n\n{self.instruction}"
            content = system.content
            if isinstance(content, str):
                overrides["system_message"] = SystemMessage(content + addition)
            else:
                text_block = {"type": "text", "text": addition}
                overrides["system_message"] = SystemMessage([*content, text_block])
        if self.max_searches is not None and self._searches(request) >= self.max_searches:
            overrides["tool_choice"] = answer_only_choice(request.model)
        return request.override(**overrides) if overrides else request

    def _searches(self, request: ModelRequest[Any]) -> int:
        count = 0
        for message in reversed(request.messages):
            if isinstance(message, HumanMessage):
                break
            if isinstance(message, AIMessage):
                count += sum(call["name"] == self.tool_name for call in message.tool_calls)
        return count

    def tool_request(self, request: ToolCallRequest) -> tuple[ToolCallRequest, list[str]]:
        """Return the request to run under the cap, and the sub-queries cut from a foreign tool."""
        call, tool = request.tool_call, request.tool
        if call["name"] != self.tool_name or tool is None:
            return request, []
        if isinstance(tool, ParallelSearchTool):
            capped = tool.model_copy(update={"max_sub_queries": self.max_sub_queries})
            return request.override(tool=capped), []
        queries = call["args"].get("query_list")
        if not isinstance(queries, list) or len(queries) <= self.max_sub_queries:
            return request, []
        args = {**call["args"], "query_list": queries[: self.max_sub_queries]}
        dropped = [str(q) for q in queries[self.max_sub_queries :]]
        return request.override(tool_call={**call, "args": args}), dropped

    def _first_search(self, request: ToolCallRequest) -> bool:
        """Whether this call is of the question's first search step (the graph's turn 1)."""
        state = request.state
        messages = state.get("messages", []) if isinstance(state, dict) else []
        steps = 0
        for message in reversed(messages):
            if isinstance(message, HumanMessage):
                break
            if isinstance(message, AIMessage):
                steps += any(call["name"] == self.tool_name for call in message.tool_calls)
        return steps <= 1

    def _counted_tool(self, result: ToolResult, dropped: list[str], first: bool) -> ToolResult:
        if not isinstance(result, ToolMessage):
            return result
        if dropped:
            note = skipped_note(dropped, self.max_sub_queries)
            result = result.model_copy(update={"content": f"{result.text}\n{note}"})
        artifact = result.artifact if isinstance(result.artifact, dict) else {}
        counters = artifact.get("counters")
        if not isinstance(counters, dict) or not counters:
            return result
        counters = {
            **counters,
            "first_turn_parallel": int(first and counters.get("parallel_turns", 0) > 0),
        }
        return Command(update={"messages": [result], "counters": counters})


def _counted(response: ModelResponse[Any]) -> ExtendedModelResponse[Any]:
    """Attach the call's counters (``llm_calls`` and tokens) as a state update."""
    counters = {"llm_calls": 1}
    for message in response.result:
        if isinstance(message, AIMessage):
            counters = add_counters(counters, usage_counters(message))
    command: Command[Any] = Command(update={"counters": counters})
    return ExtendedModelResponse(model_response=response, command=command)
