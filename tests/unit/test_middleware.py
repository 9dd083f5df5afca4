"""ParallelSearch's middleware by concern, and the settings' old names (one release, a warning).

The agents run on scripted tool-calling models (``tests.fakes.ToolCallingChatModel``).
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage, ToolMessage

from langgraph_parallel import ParallelSearchMiddleware, parallel_search_tool
from langgraph_parallel.parallel_search.agent_middleware import (
    SearchCountersMiddleware,
    SearchInstructionMiddleware,
    SearchTurnLimitMiddleware,
    answer_only_choice,
    searches_since_question,
)
from langgraph_parallel.parallel_search.agent_tool import ParallelSearchTool
from langgraph_parallel.parallel_search.renamed import renamed_keywords
from tests.fakes import CountingSearcher, ToolCallingChatModel, search_call

SCRIPT = [
    search_call({"query_list": ["a", "b"]}, "c1"),
    search_call({"query_list": ["c"]}, "c2"),
    "done",
]


def run(middleware: list[Any], **tool_options: Any) -> tuple[dict[str, Any], ToolCallingChatModel]:
    model = ToolCallingChatModel(script=list(SCRIPT))
    tool = parallel_search_tool(CountingSearcher(), **tool_options)
    agent = create_agent(model, tools=[tool], middleware=middleware, system_prompt="Be brief.")
    return agent.invoke({"messages": [HumanMessage("q?")]}), model


def texts(model: ToolCallingChatModel) -> list[list[tuple[str, Any]]]:
    """Each call's messages as (type, content): ids differ from run to run."""
    return [[(m.type, m.content) for m in call] for call in model.calls]


def test_the_three_parts_make_the_agent_parallel_search_middleware_makes() -> None:
    whole, whole_model = run([ParallelSearchMiddleware(max_turns=1)])
    parts = [
        SearchInstructionMiddleware(),
        SearchTurnLimitMiddleware(max_turns=1),
        SearchCountersMiddleware(),
    ]
    split, split_model = run(parts)
    assert split["counters"] == whole["counters"]
    assert whole["counters"]["first_turn_parallel"] == 1 and whole["counters"]["llm_calls"] == 3
    assert texts(split_model) == texts(whole_model)  # the same prompts, call for call
    assert split_model.call_kwargs == whole_model.call_kwargs
    # After one search the model may only answer (the scripted model writes its script anyway).
    choices = [kwargs.get("tool_choice") for kwargs in whole_model.call_kwargs]
    assert choices == [None, "none", "none"]


def test_each_part_does_its_one_thing() -> None:
    state, model = run([SearchCountersMiddleware()])
    assert model.calls[0][0].content == "Be brief."  # no instruction
    assert [kwargs.get("tool_choice") for kwargs in model.call_kwargs] == [None, None, None]
    assert state["counters"]["llm_calls"] == 3 and state["counters"]["searches"] == 2
    # The first search was parallel, the second one is not of the first step.
    assert state["counters"]["first_turn_parallel"] == 1
    state, model = run([SearchInstructionMiddleware()])
    assert "counters" not in state
    assert model.calls[0][0].content.startswith("Be brief.\n\nWhen a question has parts")
    state, model = run([SearchTurnLimitMiddleware(max_turns=2)])
    assert "counters" not in state
    assert [kwargs.get("tool_choice") for kwargs in model.call_kwargs] == [None, None, "none"]
    with pytest.raises(ValueError, match="max_turns"):
        SearchTurnLimitMiddleware(max_turns=0)


def test_one_scan_back_to_the_last_human_message_counts_the_searches() -> None:
    messages = [
        HumanMessage("one?"),
        search_call({"query_list": ["old"]}),
        ToolMessage("x", tool_call_id="call_1"),
        HumanMessage("two?"),
        search_call({"query_list": ["a"]}),
        ToolMessage("x", tool_call_id="call_1"),
        search_call({"query_list": ["b"]}, name="other"),
        search_call({"query_list": ["c"]}),
    ]
    assert searches_since_question(messages, "search") == [1, 0, 1]
    assert searches_since_question(messages[:4], "search") == []


def test_the_old_names_work_for_one_release_and_say_which_name_to_use() -> None:
    with pytest.warns(DeprecationWarning) as caught:
        tool = parallel_search_tool(CountingSearcher(), k=2, max_sub_queries=5, timeout=9.0)
    assert (tool.top_k, tool.max_parallel_queries, tool.search_timeout) == (2, 5, 9.0)
    said = sorted(str(w.message) for w in caught)
    assert said == [
        "parallel_search_tool(k=...) is deprecated and goes in the next release: "
        "use parallel_search_tool(top_k=2).",
        "parallel_search_tool(max_sub_queries=...) is deprecated and goes in the next release: "
        "use parallel_search_tool(max_parallel_queries=5).",
        "parallel_search_tool(timeout=...) is deprecated and goes in the next release: "
        "use parallel_search_tool(search_timeout=9.0).",
    ]
    assert caught[0].filename == __file__  # the warning points at the caller's line
    with pytest.warns(DeprecationWarning, match=r"use ParallelSearchTool\(top_k=2\)"):
        built = ParallelSearchTool(searcher=CountingSearcher(), k=2)
    assert built.top_k == 2
    with pytest.warns(DeprecationWarning, match=r"use ParallelSearchMiddleware\(max_turns=1\)"):
        middleware = ParallelSearchMiddleware(max_searches=1)
    assert middleware.max_turns == 1
    # The cap moved to the tool: the warning says so, and this release still runs under it.
    with pytest.warns(DeprecationWarning, match=r"parallel_search_tool\(max_parallel_queries=1\)"):
        capped = ParallelSearchMiddleware(1)
    state, model = run([capped])
    assert [m.artifact["skipped"] for m in state["messages"] if isinstance(m, ToolMessage)] == [
        ["b"],
        [],
    ]
    assert "(at most 1)" in model.calls[0][0].content
    # The new names warn of nothing.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_search_tool(CountingSearcher(), top_k=2, search_timeout=9.0)
        ParallelSearchMiddleware(max_turns=1)


def test_a_keyword_that_is_no_old_name_is_refused_as_python_refuses_it() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'max_queries'"):
        parallel_search_tool(CountingSearcher(), max_queries=3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'k'"):
        ParallelSearchMiddleware(k=3)
    with pytest.raises(TypeError, match="unexpected keyword argument 'x'"):
        renamed_keywords("f", {"x": 1}, {"y": "z"})
    with pytest.raises(TypeError, match="keyword arguments only"):
        ParallelSearchMiddleware(1, 2)


class DropsToolChoice(ToolCallingChatModel):
    """A chat model whose binding sends no ``tool_choice`` at all."""

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(tools=[getattr(t, "name", None) for t in tools], **kwargs)


class ForcesNamedTools(ToolCallingChatModel):
    """A chat model that reads a string as the tool to force, as ``ChatAnthropic`` does."""

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        if isinstance(tool_choice, str):
            tool_choice = {"type": "tool", "name": tool_choice}
        return super().bind_tools(tools, tool_choice=tool_choice, **kwargs)


def test_the_answer_only_form_is_read_off_the_request_the_model_builds() -> None:
    tools = [parallel_search_tool(CountingSearcher())]
    assert answer_only_choice(ToolCallingChatModel(script=[]), tools) == "none"
    assert answer_only_choice(ForcesNamedTools(script=[]), tools) == {"type": "none"}
    assert answer_only_choice(DropsToolChoice(script=[]), tools) == "none"
    # A chat model that binds no tools at all (the base class raises NotImplementedError).
    from langchain_core.language_models import GenericFakeChatModel

    assert answer_only_choice(GenericFakeChatModel(messages=iter([])), tools) == "none"
