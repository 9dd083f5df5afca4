"""``bind_tools`` of the policies: a conversation in, the graph's transcript rendered, calls out.

``EngineStub`` is ``ChatVLLM`` with the engine replaced at its one seam (``_submit``: the
rendered messages and sampling options in, a vLLM-shaped output out), so what the engine would
be asked for (prompt text, stop sequences, regex) and how its text becomes ``tool_calls`` are
pinned down without starting vLLM. ``ChatVLLMServer`` shares the code; its request and reply are
in ``test_served_chat.py``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from types import SimpleNamespace
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from pydantic import PrivateAttr

from langgraph_parallel import ParallelSearchMiddleware, parallel_search_tool
from langgraph_parallel.dialect.transcript import policy_transcript, step_text
from langgraph_parallel.errors import UserError
from langgraph_parallel.models.replies import raw_text
from langgraph_parallel.models.vllm_chat import ChatVLLM
from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
from langgraph_parallel.prompts import parallel_search_instruction, rules_prompt
from langgraph_parallel.protocol import STOP_SEQUENCES, action_regex, answer_regex
from tests.fakes import CountingSearcher, ScriptedChatModel

QUESTION = "Which magazine was started first, Arthur's Magazine or First for Women?"
SEARCH = "<think> two magazines </think>\n<search> Arthur's Magazine ## First for Women </search>"
ANSWER = "<think> 1844 is before 1989 </think>\n<answer> Arthur's Magazine </answer>"


class EngineStub(ChatVLLM):
    """``ChatVLLM`` whose engine replays ``steps`` and records what it was asked."""

    steps: list[str] = []
    _asked: list[tuple[str, list[str] | None, dict[str, Any]]] = PrivateAttr(default_factory=list)

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        # A started engine; the prompt (raw, the rules) is the card's of the trained policy.
        self._worker = SimpleNamespace(dead=False)  # type: ignore[assignment]

    @property
    def asked(self) -> list[tuple[str, list[str] | None, dict[str, Any]]]:
        return self._asked

    def _submit(self, messages: list[BaseMessage], stop: list[str] | None, **kwargs: Any) -> Any:
        self._asked.append((raw_text(messages), stop, kwargs))
        text = self.steps[min(len(self._asked), len(self.steps)) - 1]
        stopped = next((s for s in STOP_SEQUENCES if text.endswith(s)), None)
        completion = SimpleNamespace(
            text=text, token_ids=[0] * 9, finish_reason="stop", stop_reason=stopped, logprobs=None
        )
        output = SimpleNamespace(
            prompt_token_ids=[0] * 40, num_cached_tokens=32, outputs=[completion]
        )
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_result(output)
        return future


def search_tool() -> Any:
    return parallel_search_tool(CountingSearcher())


def test_a_search_step_becomes_one_search_call_with_the_query_list() -> None:
    model = EngineStub(model="smollm2-parallel", steps=[SEARCH])
    reply = model.bind_tools([search_tool()]).invoke([HumanMessage(QUESTION)])
    assert reply.tool_calls == [
        {
            "name": "search",
            "args": {"query_list": ["Arthur's Magazine", "First for Women"]},
            "id": "call_1",
            "type": "tool_call",
        }
    ]
    assert reply.content == ""
    assert reply.additional_kwargs["reasoning_content"] == "two magazines"
    assert reply.content_blocks[0] == {"type": "reasoning", "reasoning": "two magazines"}
    assert reply.response_metadata["step_text"] == SEARCH
    assert reply.usage_metadata is not None
    assert reply.usage_metadata["input_tokens"] == 40
    assert reply.usage_metadata["input_token_details"]["cache_read"] == 32
    # The engine was asked what a graph step asks: the rules prompt, the stops, the grammar.
    prompt, stop, options = model.asked[0]
    assert prompt == rules_prompt(QUESTION, decompose=True)
    assert stop == list(STOP_SEQUENCES)
    assert options["regex"] == action_regex(decompose=True)
    assert "tools" not in options and "tool_choice" not in options


def test_an_answer_step_is_the_content_or_an_answer_call_when_one_is_bound() -> None:
    model = EngineStub(model="smollm2-parallel", steps=[ANSWER])
    reply = model.bind_tools([search_tool()]).invoke([HumanMessage(QUESTION)])
    assert reply.content == "Arthur's Magazine" and reply.tool_calls == []
    assert reply.additional_kwargs["reasoning_content"] == "1844 is before 1989"

    @tool
    def answer(answer: str) -> str:
        """Give the final answer."""
        return answer

    reply = model.bind_tools([search_tool(), answer]).invoke([HumanMessage(QUESTION)])
    assert reply.content == ""
    assert [(c["name"], c["args"]) for c in reply.tool_calls] == [
        ("answer", {"answer": "Arthur's Magazine"})
    ]


def test_tool_choice_none_decodes_with_the_answer_grammar() -> None:
    model = EngineStub(model="smollm2-parallel", steps=[ANSWER])
    model.bind_tools([search_tool()], tool_choice="none").invoke([HumanMessage(QUESTION)])
    assert model.asked[0][2]["regex"] == answer_regex()


def test_a_regex_of_the_call_or_the_model_is_kept() -> None:
    model = EngineStub(model="smollm2-parallel", steps=[ANSWER])
    model.bind_tools([search_tool()]).invoke([HumanMessage(QUESTION)], regex="<answer> x </answer>")
    assert model.asked[0][2]["regex"] == "<answer> x </answer>"
    fixed = EngineStub(model="smollm2-parallel", steps=[ANSWER], regex="(.*)")
    fixed.bind_tools([search_tool()]).invoke([HumanMessage(QUESTION)])
    assert "regex" not in fixed.asked[0][2]  # the model's own regex applies (sampling reads it)


def test_a_step_with_no_action_comes_back_as_text_with_the_reason() -> None:
    cut = "<think> the step ran out of tokens <sea"
    model = EngineStub(model="smollm2-parallel", steps=[cut])
    reply = model.bind_tools([search_tool()]).invoke([HumanMessage(QUESTION)])
    assert reply.tool_calls == [] and reply.content == cut
    assert reply.response_metadata["action_error"]


def test_any_tools_bind_and_without_a_search_tool_every_step_answers() -> None:
    @tool
    def lookup(query: str) -> str:
        """Look up."""
        return query

    model = EngineStub(model="smollm2-parallel", steps=["<think> t </think><answer> x </answer>"])
    reply = model.bind_tools([lookup]).invoke([HumanMessage(QUESTION)])
    assert reply.content == "x" and reply.tool_calls == []
    assert "<search>" not in model.asked[0][2]["regex"]  # the answer-only grammar


def test_structured_output_decodes_under_the_schema_and_parses_the_reply() -> None:
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        country: str

    model = EngineStub(model="smollm2", steps=['{"name": "Paris", "country": "France"}'])
    assert model.with_structured_output(City).invoke("A city?") == City(
        name="Paris", country="France"
    )
    assert model.asked[0][2]["json_schema"]["properties"].keys() == {"name", "country"}
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    cut = EngineStub(model="smollm2", steps=['{"n": 4', '{"n": 4}'])
    first = cut.with_structured_output(schema, include_raw=True).invoke("A number?")
    assert first["parsed"] is None and first["parsing_error"] is not None  # cut by max_tokens
    assert cut.with_structured_output(schema).invoke("Again?") == {"n": 4}
    assert cut.asked[0][2]["json_schema"] == schema
    with pytest.raises(UserError, match="method='json_schema'"):
        model.with_structured_output(City, method="function_calling")


def test_a_streamed_step_with_tools_comes_whole_with_its_tool_call() -> None:
    model = EngineStub(model="smollm2-parallel", steps=[SEARCH])
    chunks = list(model.bind_tools([search_tool()]).stream([HumanMessage(QUESTION)]))
    calls = [call for chunk in chunks for call in chunk.tool_calls]
    assert [call["name"] for call in calls] == ["search"]
    assert any(chunk.usage_metadata for chunk in chunks)


def test_a_call_without_tools_is_unchanged() -> None:
    model = EngineStub(model="smollm2-parallel", steps=[SEARCH])
    reply = model.invoke([HumanMessage("Question: q\n")], stop=["</search>"])
    assert reply.content == SEARCH and reply.tool_calls == []
    assert model.asked[0][:2] == ("Question: q\n", ["</search>"])
    assert "regex" not in model.asked[0][2]


def test_the_dialect_is_found_by_its_entry_point_name_and_a_missing_one_names_the_fix() -> None:
    from langgraph_parallel.dialect import SEARCH_R1
    from langgraph_parallel.models.dialect import tool_dialect

    assert tool_dialect() is SEARCH_R1  # the package registers search-r1 (pyproject.toml)
    model = EngineStub(model="smollm2-parallel", steps=[SEARCH], dialect="my-format")
    with pytest.raises(UserError, match="no tool dialect 'my-format'.*search-r1"):
        model.bind_tools([search_tool()]).invoke([HumanMessage(QUESTION)])
    assert model.asked == []  # refused before the engine was asked anything
    # A call without tools needs no dialect.
    assert model.invoke("Question: q\n").content == SEARCH


def test_the_packages_own_dialect_needs_no_entry_point_and_one_may_be_passed_as_an_object(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tomllib
    from pathlib import Path

    from langgraph_parallel.dialect import SEARCH_R1
    from langgraph_parallel.models import dialect

    # A source tree that was never installed has no entry points: ours is found all the same.
    monkeypatch.setattr(dialect, "entry_points", lambda **_: [])
    dialect._named.cache_clear()
    try:
        assert dialect.tool_dialect("search-r1") is SEARCH_R1
        with pytest.raises(UserError, match="no tool dialect 'my-format' .*known: search-r1"):
            dialect.tool_dialect("my-format")
    finally:
        dialect._named.cache_clear()
    # The target is the one pyproject.toml registers, so the two cannot drift apart.
    project = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert project["project"]["entry-points"][dialect.DIALECT_GROUP] == dialect.OWN_DIALECTS

    # A dialect object is used as it is, no name looked up.
    class Mine:
        def __init__(self) -> None:
            self.prepared = 0

        def prepare(self, messages: Any, stop: Any, kwargs: dict[str, Any], **how: Any) -> Any:
            self.prepared += 1
            return SEARCH_R1.prepare(messages, stop, kwargs, **how)

        def warm_up_calls(self, question: str, kind: str) -> list[tuple[str, dict[str, Any]]]:
            return []

    mine = Mine()
    model = EngineStub(model="smollm2-parallel", steps=[SEARCH], dialect=mine)
    reply = model.bind_tools([search_tool()]).invoke([HumanMessage(QUESTION)])
    assert mine.prepared == 1 and reply.tool_calls[0]["name"] == "search"
    assert dialect.tool_dialect(mine) is mine


class RawScripted(ScriptedChatModel):
    """A scripted model the graph prompts as it prompts the trained policies."""

    style: str = "raw"
    raw_prompt: str = "rules"


def test_the_policy_reads_the_transcript_the_graph_builds_byte_for_byte() -> None:
    # The graph, on a scripted policy: its second prompt, after one search.
    graph_model = RawScripted(script=[SEARCH, ANSWER])
    graph = create_parallel_search_graph(graph_model, CountingSearcher(), constrain=False)
    graph.invoke({"question": QUESTION})
    graph_prompt = raw_text(graph_model.calls[1])
    # create_agent with the tool and the middleware, on the same steps.
    model = EngineStub(model="smollm2-parallel", steps=[SEARCH, ANSWER])
    agent = create_agent(
        model,
        tools=[parallel_search_tool(CountingSearcher())],
        middleware=[ParallelSearchMiddleware()],
        system_prompt="Be helpful.",  # not shown to a raw policy
    )
    state = agent.invoke({"messages": [HumanMessage(QUESTION)]})
    assert model.asked[1][0] == graph_prompt
    assert state["messages"][-1].content == "Arthur's Magazine"
    assert state["counters"]["sub_queries"] == 2 and state["counters"]["llm_calls"] == 2
    # The second prompt extends the first: the engine's prefix cache serves it.
    assert model.asked[1][0].startswith(model.asked[0][0] + SEARCH)


def test_the_async_path_gives_the_same_reply() -> None:
    model = EngineStub(model="smollm2-parallel", steps=[SEARCH])
    reply = asyncio.run(model.bind_tools([search_tool()]).ainvoke([HumanMessage(QUESTION)]))
    assert reply.tool_calls[0]["args"] == {"query_list": ["Arthur's Magazine", "First for Women"]}


def test_other_models_steps_are_written_out_as_policy_steps() -> None:
    # An OpenAI-style turn: words, then a call; the observation of a tool that is not ours.
    turn = AIMessage(
        "I will look both up.",
        tool_calls=[{"name": "search", "args": {"query_list": ["a", "b"]}, "id": "x"}],
    )
    result = ToolMessage("42", tool_call_id="x", name="calculator")
    messages = [SystemMessage("sys"), HumanMessage("q?"), turn, result, AIMessage("yes")]
    rendered = policy_transcript(messages, style="raw", kind="rules")
    assert [m.content for m in rendered] == [
        rules_prompt("q?", decompose=True),  # the system message is not shown to a raw policy
        "<think> I will look both up. </think>\n<search> a ## b </search>",
        "\n\n<information>[calculator]\n42\n</information>\n\n",
        "<answer> yes </answer>",
    ]
    chat = policy_transcript(messages[:2], style="chat", kind="rules")
    assert chat[0] == SystemMessage("sys")
    assert chat[1].content == parallel_search_instruction(True).replace("{question}", "q?")


def test_a_recorded_step_is_used_only_while_it_says_what_the_calls_say() -> None:
    calls = [{"name": "search", "args": {"query_list": ["a"]}, "id": "1"}]
    recorded = "<think> t </think> <search>a</search>"  # the engine's own spacing
    message = AIMessage(
        "",
        tool_calls=calls,
        additional_kwargs={"reasoning_content": "t"},
        response_metadata={"step_text": recorded},
    )
    assert step_text(message) == recorded
    edited = message.model_copy(
        update={"tool_calls": [{**calls[0], "args": {"query_list": ["b"]}, "type": "tool_call"}]}
    )
    assert step_text(edited) == "<think> t </think>\n<search> b </search>"


def test_a_later_question_continues_the_raw_document() -> None:
    messages = [HumanMessage("one?"), AIMessage("x"), HumanMessage("two?")]
    rendered = policy_transcript(messages, style="raw", kind="rules")
    assert raw_text(rendered).endswith("<answer> x </answer>\n\nQuestion: two?\n")
