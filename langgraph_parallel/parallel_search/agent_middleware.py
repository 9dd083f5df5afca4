"""ParallelSearch's rules for a ``create_agent`` agent, one middleware per concern.

In the style of langchain's own middleware (``ModelCallLimitMiddleware``,
``ToolCallLimitMiddleware``, ``dynamic_prompt``), each class is one rule, and
:class:`~.middleware.ParallelSearchMiddleware` is the three in one. All use the hooks that wrap
calls (``wrap_model_call``, ``wrap_tool_call``), so none adds a node to the agent's graph:

- **Instruction** (:class:`SearchInstructionMiddleware`). Every model call's system prompt gets
  the decomposition instruction
  (:data:`~langgraph_parallel.prompts.PARALLEL_SEARCH_TOOL_INSTRUCTION`), after the agent's
  own, with the cap of the search tool the request declares. (The embedded policies are shown
  their trained rules prompt instead; see :mod:`~langgraph_parallel.dialect.transcript`.)
- **Turn limit** (:class:`SearchTurnLimitMiddleware`). After ``max_turns`` searches since the
  last user message, the model is called with a ``tool_choice`` that allows no tool call: it
  must answer, as the graph's final answer-only step (the embedded policies then decode with
  the answer-only grammar). The form of "no tool" is read off the request the model itself
  builds (:func:`answer_only_choice`).
- **Counters** (:class:`SearchCountersMiddleware`). The agent's state gets ``counters`` under
  the graph's names: ``llm_calls`` and the token counts of every model call,
  ``turns``/``searches``/``sub_queries``/``parallel_turns``/``first_turn_parallel`` of every
  search (from the tool's artifact).

The sub-query cap is the tool's (``parallel_search_tool(..., max_parallel_queries=...)``): no
middleware cuts a ``query_list``, so the setting has one owner and the transcript keeps what the
model wrote, as the graph's does.
"""

from __future__ import annotations

import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AIMessage, AnyMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableBinding
from langgraph.types import Command

from langgraph_parallel.agent.searches import searches_since_question
from langgraph_parallel.agent.state import add_counters
from langgraph_parallel.errors import UserError, install_hint
from langgraph_parallel.models.usage import usage_counters
from langgraph_parallel.parallel_search.agent_tool import ParallelSearchTool
from langgraph_parallel.prompts import PARALLEL_SEARCH_TOOL_INSTRUCTION
from langgraph_parallel.protocol import DEFAULT_MAX_PARALLEL_QUERIES


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

__all__ = [
    "ParallelSearchAgentState",
    "SearchCountersMiddleware",
    "SearchInstructionMiddleware",
    "SearchTurnLimitMiddleware",
    "answer_only_choice",
    "searches_since_question",
]

ToolResult = ToolMessage | Command[Any]

ANSWER_ONLY = "none"
"""The ``tool_choice`` that allows no tool call, as OpenAI, Google and our vLLM models read it."""

ANSWER_ONLY_OBJECT = {"type": "none"}
"""The same as an object, the Anthropic API's form. ``ChatAnthropic.bind_tools`` (checked on
langchain-anthropic 1.7) turns every string but ``"any"`` and ``"auto"`` into a forced call of
the tool of that name, so ``"none"`` would force a call of a tool named ``none`` (and with
thinking on, the forced choice is dropped with a warning, so the model may call tools)."""


class ParallelSearchAgentState(AgentState[Any]):
    """The agent's state with the graph's ``counters`` (summed over the thread's runs)."""

    counters: NotRequired[Annotated[dict[str, int], add_counters]]


def answer_only_choice(model: Any, tools: Sequence[Any]) -> str | dict[str, str]:
    """Return the ``tool_choice`` with which ``model`` may call none of ``tools`` (must answer).

    Read off the request the model itself builds, ``model.bind_tools(tools, tool_choice=...)``,
    no provider name: :data:`ANSWER_ONLY` when the model's binding keeps it, else
    :data:`ANSWER_ONLY_OBJECT` when its binding keeps that (``ChatAnthropic``, with or without
    thinking), else :data:`ANSWER_ONLY` (a model whose binding drops every ``tool_choice``).
    ``test_agent_tool`` checks what each provider class then sends. The tools stay declared
    rather than being removed from the request: the transcript still holds their calls and
    results, and a request with tool calls but no tool declared is not well-formed for every
    provider.
    """
    for choice in (ANSWER_ONLY, ANSWER_ONLY_OBJECT):
        if _binding_keeps(model, tools, choice):
            return choice
    return ANSWER_ONLY


def _binding_keeps(model: Any, tools: Sequence[Any], choice: str | dict[str, str]) -> bool:
    """Whether ``model.bind_tools(tools, tool_choice=choice)`` sends ``choice`` as given."""
    try:
        # A probe, not the call: a warning the binding gives (a choice it drops) is not the
        # user's to read, the real request warns again if it is sent.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bound = model.bind_tools(list(tools), tool_choice=choice)
    except (NotImplementedError, TypeError, ValueError):
        return False
    return isinstance(bound, RunnableBinding) and bound.kwargs.get("tool_choice") == choice


class _RequestMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """A middleware that only rewrites the model request (:meth:`model_request`), sync or async."""

    def model_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """Return the request the model is called with."""
        raise NotImplementedError

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Call the model with :meth:`model_request`'s request."""
        return handler(self.model_request(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        return await handler(self.model_request(request))


class SearchInstructionMiddleware(_RequestMiddleware):
    """Add the decomposition instruction to every model call's system prompt (module docstring).

    The instruction states the cap of the search tool the request declares (a
    :class:`~.agent_tool.ParallelSearchTool`'s ``max_parallel_queries``; the default cap for a
    search tool of your own, which this middleware does not cap).

    Args:
        instruction: The text added to the system prompt (``{tool}`` and
            ``{max_parallel_queries}`` are filled in); ``None``:
            :data:`~langgraph_parallel.prompts.PARALLEL_SEARCH_TOOL_INSTRUCTION`.
        tool_name: The search tool's name.
    """

    def __init__(self, *, instruction: str | None = None, tool_name: str = "search") -> None:
        super().__init__()
        self.template = instruction or PARALLEL_SEARCH_TOOL_INSTRUCTION
        if "{max_sub_queries}" in self.template:
            warnings.warn(
                "The instruction's {max_sub_queries} placeholder is deprecated and goes in the "
                "next release: write {max_parallel_queries}.",
                DeprecationWarning,
                stacklevel=2,
            )
        self.tool_name = tool_name

    def instruction(self, tools: Sequence[Any]) -> str:
        """Return the instruction for a request declaring ``tools``."""
        cap = next(
            (
                tool.max_parallel_queries
                for tool in tools
                if isinstance(tool, ParallelSearchTool) and tool.name == self.tool_name
            ),
            DEFAULT_MAX_PARALLEL_QUERIES,
        )
        # The old placeholder is filled too, for a template written against it (deprecated).
        return self.template.format(
            tool=self.tool_name, max_parallel_queries=cap, max_sub_queries=cap
        )

    def model_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """Return ``request`` with the instruction after the system prompt (once)."""
        instruction = self.instruction(request.tools)
        system = request.system_message
        if system is None:
            return request.override(system_message=SystemMessage(instruction))
        if instruction in system.text:  # added already (by another instance)
            return request
        addition = f"\n\n{instruction}"
        content = system.content
        if isinstance(content, str):
            return request.override(system_message=SystemMessage(content + addition))
        text_block = {"type": "text", "text": addition}
        return request.override(system_message=SystemMessage([*content, text_block]))


class SearchTurnLimitMiddleware(_RequestMiddleware):
    """After ``max_turns`` searches since the last user message, the model may only answer.

    As the graph's ``max_turns`` with its final answer-only step: the model call after the
    last search allows no tool call (:func:`answer_only_choice`). A new user message starts a
    new count.

    Args:
        max_turns: Searches (``tool_name`` calls) since the last user message after which the
            model must answer.
        tool_name: The search tool's name.

    Raises:
        ValueError: ``max_turns`` below 1.
    """

    def __init__(self, *, max_turns: int = 4, tool_name: str = "search") -> None:
        super().__init__()
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1.")
        self.max_turns = max_turns
        self.tool_name = tool_name

    def model_request(self, request: ModelRequest[Any]) -> ModelRequest[Any]:
        """Return ``request``, with no tool call allowed once the limit is reached."""
        if sum(searches_since_question(request.messages, self.tool_name)) < self.max_turns:
            return request
        return request.override(tool_choice=answer_only_choice(request.model, request.tools))


class SearchCountersMiddleware(AgentMiddleware[ParallelSearchAgentState, Any, Any]):
    """Keep the graph's ``counters`` in the agent's state (:class:`ParallelSearchAgentState`).

    Every model call adds ``llm_calls`` 1 and its token counts; every ``tool_name`` call adds
    the counters of the tool's artifact (a :class:`~.agent_tool.ParallelSearchTool`'s: the
    turn's, ``first_turn_parallel`` included); a search tool of your own whose artifact has no
    ``first_turn_parallel`` gets it here (1 when the question's first search step searched in
    parallel).

    Args:
        tool_name: The search tool's name.
    """

    state_schema = ParallelSearchAgentState

    def __init__(self, *, tool_name: str = "search") -> None:
        super().__init__()
        self.tool_name = tool_name

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ExtendedModelResponse[Any]:
        """Call the model and count the call."""
        return _counted(handler(request))

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ExtendedModelResponse[Any]:
        """Async :meth:`wrap_model_call`."""
        return _counted(await handler(request))

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]
    ) -> ToolResult:
        """Run the call and move a search's counters into the state."""
        return self.counted(request, handler(request))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolResult]],
    ) -> ToolResult:
        """Async :meth:`wrap_tool_call`."""
        return self.counted(request, await handler(request))

    def counted(self, request: ToolCallRequest, result: ToolResult) -> ToolResult:
        """Return ``result`` of ``request`` with its search counters as a state update."""
        if request.tool_call["name"] != self.tool_name or not isinstance(result, ToolMessage):
            return result
        artifact = result.artifact if isinstance(result.artifact, dict) else {}
        counters = artifact.get("counters")
        if not isinstance(counters, dict) or not counters:
            return result
        update = dict(counters)
        if "first_turn_parallel" not in update:  # the turn computes it; another tool may not
            state = request.state
            messages: list[AnyMessage] = (
                state.get("messages", []) if isinstance(state, dict) else []
            )
            # The state holds this call's own AI message: the first search step is the first one.
            first = sum(n > 0 for n in searches_since_question(messages, self.tool_name)) <= 1
            update["first_turn_parallel"] = int(first and counters.get("parallel_turns", 0) > 0)
        return Command(update={"messages": [result], "counters": update})


def _counted(response: ModelResponse[Any]) -> ExtendedModelResponse[Any]:
    """Attach the call's counters (``llm_calls`` and tokens) as a state update."""
    counters = {"llm_calls": 1}
    for message in response.result:
        if isinstance(message, AIMessage):
            counters = add_counters(counters, usage_counters(message))
    command: Command[Any] = Command(update={"counters": counters})
    return ExtendedModelResponse(model_response=response, command=command)
