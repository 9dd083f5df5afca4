"""ParallelSearch in langchain's ``create_agent``: the ``search`` tool and the middleware.

The agents run on scripted tool-calling models (``tests.fakes.ToolCallingChatModel``) that
return preset ``AIMessage`` tool calls in the shapes different providers send.
"""

from __future__ import annotations

import asyncio
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import HumanMessage, SystemMessage, ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool

from langgraph_parallel import ParallelSearchMiddleware, parallel_search_tool
from langgraph_parallel.errors import UserError
from langgraph_parallel.parallel_search.agent_middleware import SearchTurnLimitMiddleware
from langgraph_parallel.parallel_search.turn import LISTED_ELSEWHERE
from langgraph_parallel.prompts import PARALLEL_SEARCH_TOOL_INSTRUCTION
from langgraph_parallel.protocol import format_observation
from langgraph_parallel.retrieval.documents import Passage, format_passages
from tests.fakes import CountingSearcher, ToolCallingChatModel, search_call

QUESTION = "Which magazine was started first, Arthur's Magazine or First for Women?"
MAGAZINES = ["Arthur's Magazine", "First for Women"]


def run_agent(
    script: list[Any],
    searcher: Any = None,
    *,
    middleware: Sequence[Any] = (),
    system_prompt: str | None = None,
    **tool_options: Any,
) -> tuple[dict[str, Any], ToolCallingChatModel, CountingSearcher]:
    searcher = searcher or CountingSearcher()
    model = ToolCallingChatModel(script=script)
    agent = create_agent(
        model,
        tools=[parallel_search_tool(searcher, **tool_options)],
        middleware=list(middleware),
        system_prompt=system_prompt,
    )
    return agent.invoke({"messages": [HumanMessage(QUESTION)]}), model, searcher


def tool_messages(state: dict[str, Any]) -> list[ToolMessage]:
    return [m for m in state["messages"] if isinstance(m, ToolMessage)]


def test_the_tool_shows_the_model_a_list_of_strings() -> None:
    spec = convert_to_openai_tool(parallel_search_tool(CountingSearcher()))["function"]
    assert spec["name"] == "search"
    assert spec["parameters"]["required"] == ["query_list"]
    assert spec["parameters"]["properties"]["query_list"]["items"] == {"type": "string"}


def test_a_list_is_searched_as_one_batched_retrieval() -> None:
    state, model, searcher = run_agent([search_call({"query_list": MAGAZINES}), "Arthur's"])
    (observation,) = tool_messages(state)
    assert searcher.batches == [MAGAZINES]  # both sub-queries in one batch_search call
    assert observation.artifact["counters"] == {
        "turns": 1,
        "searches": 1,
        "sub_queries": 2,
        "parallel_turns": 1,
        "first_turn_parallel": 1,  # the question's first search step, in parallel
    }
    assert observation.artifact["queries"] == MAGAZINES
    # The graph's observation: one [query] heading per sub-query, in the order written.
    docs = [format_passages(searcher.batch_search([q], 3)[0]) for q in MAGAZINES]
    assert observation.content == format_observation(list(zip(MAGAZINES, docs, strict=True)))
    assert state["messages"][-1].content == "Arthur's"
    assert len(model.calls) == 2  # the model read the observation and answered


@pytest.mark.parametrize(
    "args",
    [
        {"query_list": "Arthur's Magazine ## First for Women"},  # one string, split on ##
        {"query_list": '["Arthur\'s Magazine", "First for Women"]'},  # a JSON-encoded list
        {"query_list": ["Arthur's Magazine ## First for Women"]},  # ## inside a list entry
        {"query": "Arthur's Magazine ## First for Women"},  # the protocol's one-string form
    ],
    ids=["hash-string", "json-string", "hash-in-list", "query"],
)
def test_shapes_of_other_providers_give_the_same_sub_queries(args: dict[str, Any]) -> None:
    state, _, searcher = run_agent([search_call(args), "done"])
    assert searcher.batches == [MAGAZINES]
    assert tool_messages(state)[0].artifact["counters"]["sub_queries"] == 2


@pytest.mark.parametrize(
    ("args", "why"),
    [
        ({}, "needs `query_list`"),
        ({"query_list": []}, "no non-empty query"),
        ({"query_list": ["a", 3]}, "must be a list of strings"),
        ({"query_list": 42}, "must be a list of strings"),
        ({"query_list": [" ", "##"]}, "no non-empty query"),
    ],
    ids=["missing", "empty", "not-all-strings", "number", "blank"],
)
def test_a_malformed_call_is_answered_with_what_to_send_and_the_agent_goes_on(
    args: dict[str, Any], why: str
) -> None:
    script = [search_call(args, "bad"), search_call({"query_list": ["x"]}, "good"), "x it is"]
    state, model, searcher = run_agent(script)
    bad, good = tool_messages(state)
    assert bad.tool_call_id == "bad" and why in bad.content
    assert bad.content.startswith("Search not run: ")
    assert '{"query_list": ["first query", "second query"]}' in bad.content  # what to send
    assert bad.artifact["counters"] == {"invalid_steps": 1}
    assert searcher.batches == [["x"]]  # nothing was searched for the malformed call
    assert good.artifact["counters"]["sub_queries"] == 1
    assert state["messages"][-1].content == "x it is" and len(model.calls) == 3


def test_identical_sub_queries_are_searched_once() -> None:
    args = {"query_list": ["Arthur's Magazine", "arthur's  magazine ", "Arthur's Magazine"]}
    state, _, searcher = run_agent([search_call(args), "done"])
    assert searcher.batches == [["Arthur's Magazine"]]
    (observation,) = tool_messages(state)
    assert observation.content.count("[Arthur's Magazine]") == 1
    assert observation.artifact["counters"]["sub_queries"] == 1


class OverlappingSearcher:
    """Both queries find the shared page; it ranks first for ``b`` and second for ``a``."""

    SHARED = Passage("s", "Shared", "Found by both.")

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        pages = {
            "a": [Passage("a", "A", "Only a."), self.SHARED],
            "b": [self.SHARED, Passage("b", "B", "Only b.")],
            "c": [self.SHARED],
        }
        return [pages[q][:k] for q in queries]


def test_a_passage_found_twice_is_listed_once_under_the_sub_query_ranking_it_highest() -> None:
    message = parallel_search_tool(OverlappingSearcher(), dedupe_passages=True).invoke(
        {"name": "search", "args": {"query_list": ["a", "b", "c"]}, "id": "1", "type": "tool_call"}
    )
    assert message.artifact["titles"] == [["A"], ["Shared", "B"], []]
    assert message.artifact["duplicate_passages"] == 2
    assert f"[c]\n{LISTED_ELSEWHERE}\n" in message.content
    # The default: exactly the graph's observation, repeats included.
    plain = parallel_search_tool(OverlappingSearcher())
    same = plain.invoke({"query_list": ["a", "b"]})
    pages = OverlappingSearcher().batch_search(["a", "b"])
    expected = [(q, format_passages(p)) for q, p in zip(["a", "b"], pages, strict=True)]
    assert same == format_observation(expected)


class MixedSearcher(OverlappingSearcher):
    """Overlapping pages, and a search that raises for ``bad`` (a failing tool)."""

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        if "bad" in queries:
            raise RuntimeError("the service refused 'bad'")
        return super().batch_search(queries, k)


def test_the_graph_and_the_tool_show_a_policy_byte_equal_observations_by_default() -> None:
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from langgraph_parallel import create_parallel_search_graph

    queries = ["a", "b", "bad", "c", "a second", "over the cap"]
    searcher = MixedSearcher()
    searcher.batch_search = _with_extra(searcher.batch_search)  # type: ignore[method-assign]
    model = GenericFakeChatModel(
        messages=iter(
            [
                AIMessage(f"<search> {' ## '.join(queries)} </search>"),
                AIMessage("<answer> a </answer>"),
            ]
        )
    )
    graph = create_parallel_search_graph(
        model, searcher, top_k=2, max_parallel_queries=5, passage_sentences=1, prompt_style="raw"
    )
    state = graph.invoke({"question": "Q?"})
    observation = state["transcript"][2].content
    tool = parallel_search_tool(searcher, top_k=2, max_parallel_queries=5, passage_sentences=1)
    content = tool.invoke({"query_list": queries})
    assert "Search error (search failed:" in content and "Not searched" in content
    assert content.count("Shared") == 3  # repeats included, as the graph shows them
    assert observation == content
    # Their counters agree on the turn.
    call = {"name": "search", "args": {"query_list": queries}, "id": "1", "type": "tool_call"}
    artifact = tool.invoke(call).artifact
    for key in ("sub_queries", "parallel_turns", "search_errors"):
        assert artifact["counters"][key] == state["counters"][key]
    assert state["counters"]["search_errors"] == 1


def test_a_sub_query_searched_before_is_not_searched_again_the_same_in_graph_and_tool() -> None:
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from langgraph_parallel import create_parallel_search_graph
    from langgraph_parallel.parallel_search.turn import REPEATED

    turns = [["Arthur", "Women"], ["arthur", "Founded"], ["ARTHUR", "founded"]]
    graph_searcher = CountingSearcher()
    model = GenericFakeChatModel(
        messages=iter(
            [AIMessage(f"<search> {' ## '.join(t)} </search>") for t in turns]
            + [AIMessage("<answer> a </answer>")]
        )
    )
    graph = create_parallel_search_graph(model, graph_searcher, max_turns=4, prompt_style="raw")
    state = graph.invoke({"question": "Q?"})
    observations = [m.content for m in state["transcript"][2::2]]
    # Searched once each; the words decide, not their case. A turn of repeats only
    # searches nothing and still reads as one observation.
    assert graph_searcher.batches == [["Arthur", "Women"], ["Founded"]]
    assert observations[1] == format_observation([("arthur", REPEATED), ("Founded", ANY_DOC)])
    assert observations[2] == format_observation([("ARTHUR", REPEATED), ("founded", REPEATED)])
    assert state["counters"]["repeat_skips"] == 3 and state["counters"]["sub_queries"] == 6

    # The tool in an agent reads the conversation and shows the same observations.
    state, _, tool_searcher = run_agent(
        [search_call({"query_list": t}, f"call_{i}") for i, t in enumerate(turns)]
        + [AIMessage("a")]
    )
    assert [m.content for m in tool_messages(state)] == observations
    assert tool_searcher.batches == graph_searcher.batches
    counters = [m.artifact["counters"].get("repeat_skips", 0) for m in tool_messages(state)]
    assert counters == [0, 1, 2]
    # Through the middleware and into its counters.
    state, _, searcher = run_agent(
        [search_call({"query_list": t}, f"call_{i}") for i, t in enumerate(turns)]
        + [AIMessage("a")],
        middleware=[ParallelSearchMiddleware()],
    )
    assert searcher.batches == graph_searcher.batches
    assert state["counters"]["repeat_skips"] == 3
    # Off: searched again, on both paths; outside an agent there is no conversation to read.
    again = create_parallel_search_graph(
        GenericFakeChatModel(
            messages=iter(
                [AIMessage("<search> x </search>")] * 2 + [AIMessage("<answer> a </answer>")]
            )
        ),
        CountingSearcher(),
        prompt_style="raw",
    )
    off = again.invoke({"question": "Q?"}, context={"skip_repeats": False})
    assert "repeat_skips" not in off["counters"] and off["counters"]["sub_queries"] == 2
    _, _, searcher = run_agent(
        [search_call({"query_list": ["x"]}, "c1"), search_call({"query_list": ["x"]}, "c2")]
        + [AIMessage("a")],
        skip_repeats=False,
    )
    assert searcher.batches == [["x"], ["x"]]
    assert REPEATED not in parallel_search_tool(CountingSearcher()).invoke({"query_list": ["x"]})


ANY_DOC = "Doc 1(Title: Title Founded) Text about Founded."


TURN_COUNTERS = (
    "turns",
    "searches",
    "sub_queries",
    "parallel_turns",
    "first_turn_parallel",
    "repeat_skips",
    "search_errors",
    "duplicate_passages",
)
"""The counters one turn adds (``SearchTurn.finish``), on either path."""


@pytest.mark.parametrize("dedupe", [False, True])
def test_the_graph_and_the_tool_run_one_turn_byte_equal_observations_equal_counters(
    dedupe: bool,
) -> None:
    """The same scripted run through the graph and through create_agent with the tool: each
    turn's observation is byte-equal and every turn counter is equal (one driver, SearchTurn),
    with the dedupe off (the default) and on, a failing search, a repeat and the cap."""
    from langchain_core.language_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage

    from langgraph_parallel import create_parallel_search_graph
    from langgraph_parallel.parallel_search.middleware import ParallelSearchMiddleware

    turns = [["a", "b", "bad", "c", "a second", "over"], ["A", "a second", "c"]]
    options = {"top_k": 2, "max_parallel_queries": 5, "passage_sentences": 1}

    def searcher() -> MixedSearcher:
        found = MixedSearcher()
        found.batch_search = _with_extra(found.batch_search)  # type: ignore[method-assign]
        return found

    model = GenericFakeChatModel(
        messages=iter(
            [AIMessage(f"<search> {' ## '.join(t)} </search>") for t in turns]
            + [AIMessage("<answer> a </answer>")]
        )
    )
    graph = create_parallel_search_graph(
        model, searcher(), prompt_style="raw", dedupe_passages=dedupe, **options
    )
    state = graph.invoke({"question": "Q?"})
    observations = [m.content for m in state["transcript"][2::2]]
    agent_state, _, _ = run_agent(
        [search_call({"query_list": t}, f"call_{i}") for i, t in enumerate(turns)]
        + [AIMessage("a")],
        searcher=searcher(),
        middleware=[ParallelSearchMiddleware()],
        dedupe_passages=dedupe,
        **options,
    )
    assert [m.content for m in tool_messages(agent_state)] == observations
    graph_counts = {k: state["counters"].get(k, 0) for k in TURN_COUNTERS}
    tool_counts = {k: agent_state["counters"].get(k, 0) for k in TURN_COUNTERS}
    assert graph_counts == tool_counts
    assert graph_counts["search_errors"] == 1 and graph_counts["repeat_skips"] == 3
    assert graph_counts["first_turn_parallel"] == 1 and graph_counts["searches"] == 2
    # "Shared" is found by a, b and c: listed once with the dedupe, three times without.
    assert observations[0].count("Shared") == (1 if dedupe else 3)
    assert graph_counts["duplicate_passages"] == (2 if dedupe else 0)


def _with_extra(search: Any) -> Any:
    def batch_search(queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        known = [q for q in queries if q != "a second"]
        found = iter(search(known, k))
        extra = [Passage("x", "Extra", "First sentence. Second sentence.")]
        return [extra if q == "a second" else next(found) for q in queries]

    return batch_search


def test_the_cap_is_the_tools_and_the_instruction_states_it() -> None:
    args = {"query_list": ["q1", "q2", "q3", "q4", "q5"]}
    state, model, searcher = run_agent(
        [search_call(args), "done"],
        middleware=[ParallelSearchMiddleware()],
        max_parallel_queries=3,
    )
    assert searcher.batches == [["q1", "q2", "q3"]]
    (observation,) = tool_messages(state)
    assert "Not searched (limit of 3 sub-queries per turn): q4 ## q5" in observation.content
    assert observation.artifact["skipped"] == ["q4", "q5"]
    assert observation.artifact["counters"]["sub_queries"] == 3
    # The model is told the tool's number, on every call.
    assert all("(at most 3)" in call[0].content for call in model.calls)
    # The model's own message keeps all five, as the graph's transcript does.
    assert state["messages"][1].tool_calls[0]["args"] == args


def test_the_middleware_cuts_no_query_list_of_a_search_tool_of_your_own() -> None:
    seen: list[list[str]] = []

    @tool
    def search(query_list: list[str]) -> str:
        """Search each query."""
        seen.append(query_list)
        return f"results for {len(query_list)}"

    model = ToolCallingChatModel(script=[search_call({"query_list": list("abcde")}), "done"])
    agent = create_agent(model, tools=[search], middleware=[ParallelSearchMiddleware()])
    state = agent.invoke({"messages": [HumanMessage("q?")]})
    assert seen == [list("abcde")]  # your tool, your cap
    (observation,) = tool_messages(state)
    assert observation.content == "results for 5"
    # Its instruction advises the default number; no counters come from a plain result.
    assert "(at most 4)" in model.calls[0][0].content
    assert state["counters"] == {
        "llm_calls": 2,
        "prompt_tokens": 20,
        "cached_prompt_tokens": 4,
        "completion_tokens": 10,
    }


def test_the_middleware_adds_the_instruction_to_the_system_prompt() -> None:
    instruction = PARALLEL_SEARCH_TOOL_INSTRUCTION.format(tool="search", max_parallel_queries=4)
    _, model, _ = run_agent(
        [search_call({"query_list": ["a"]}), "done"],
        middleware=[ParallelSearchMiddleware()],
        system_prompt="You are a librarian.",
    )
    for call in model.calls:  # every model call
        system = call[0]
        assert isinstance(system, SystemMessage)
        assert system.content == f"You are a librarian.\n\n{instruction}"
    # No system prompt of the agent's own: the instruction alone; one that has it: unchanged.
    _, model, _ = run_agent(["done"], middleware=[ParallelSearchMiddleware()])
    assert model.calls[0][0].content == instruction
    _, model, _ = run_agent(
        ["done"], middleware=[ParallelSearchMiddleware()], system_prompt=f"{instruction} Be brief."
    )
    assert model.calls[0][0].content == f"{instruction} Be brief."
    assert "at most 4" in instruction and "`query_list`" in instruction


def test_after_max_turns_searches_the_model_may_only_answer() -> None:
    script = [search_call({"query_list": [f"q{i}"]}, f"c{i}") for i in range(2)] + ["done"]
    state, model, _ = run_agent(script, middleware=[ParallelSearchMiddleware(max_turns=2)])
    choices = [kwargs.get("tool_choice") for kwargs in model.call_kwargs]
    assert choices == [None, None, "none"]  # the third call comes after two searches
    assert len(tool_messages(state)) == 2
    # A new question starts a new count.
    model = ToolCallingChatModel(script=[search_call({"query_list": ["a"]}), "done", "again"])
    agent = create_agent(
        model,
        tools=[parallel_search_tool(CountingSearcher())],
        middleware=[ParallelSearchMiddleware(max_turns=1)],
    )
    first = agent.invoke({"messages": [HumanMessage("one?")]})
    agent.invoke({"messages": [*first["messages"], HumanMessage("two?")]})
    assert [kwargs.get("tool_choice") for kwargs in model.call_kwargs] == [None, "none", None]


def test_the_middleware_keeps_the_graph_counters_in_the_state() -> None:
    script = [search_call({"query_list": MAGAZINES}), search_call({}, "c2"), "done"]
    state, _, _ = run_agent(script, middleware=[ParallelSearchMiddleware()])
    # ScriptedChatModel reports 10 prompt tokens (2 cached) and 5 completion tokens per call.
    assert state["counters"] == {
        "llm_calls": 3,
        "prompt_tokens": 30,
        "cached_prompt_tokens": 6,
        "completion_tokens": 15,
        "turns": 1,
        "searches": 1,
        "sub_queries": 2,
        "parallel_turns": 1,
        "first_turn_parallel": 1,
        "invalid_steps": 1,
    }


def test_the_async_path_searches_concurrently_too() -> None:
    model = ToolCallingChatModel(script=[search_call({"query_list": MAGAZINES}), "done"])
    searcher = CountingSearcher()
    agent = create_agent(
        model, tools=[parallel_search_tool(searcher)], middleware=[ParallelSearchMiddleware()]
    )
    state = asyncio.run(agent.ainvoke({"messages": [HumanMessage(QUESTION)]}))
    assert searcher.batches == [MAGAZINES]
    assert state["counters"]["sub_queries"] == 2 and state["counters"]["llm_calls"] == 2


class SlowSearcher:
    def __init__(self) -> None:
        self.release = threading.Event()

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        self.release.wait(5)
        return [[] for _ in queries]


@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_search_past_its_timeout_is_reported_not_raised(path: str) -> None:
    slow = SlowSearcher()
    search = parallel_search_tool(slow, search_timeout=0.05)
    call = {"name": "search", "args": {"query_list": ["a", "b"]}, "id": "1", "type": "tool_call"}
    try:
        message = search.invoke(call) if path == "sync" else asyncio.run(search.ainvoke(call))
    finally:
        slow.release.set()
    assert message.content.count("Search error (search timed out after 0.05 s)") == 2
    assert message.artifact["errors"] == ["search timed out after 0.05 s"] * 2


def test_one_failing_sub_query_does_not_fail_the_others() -> None:
    searcher = CountingSearcher(fail=lambda q: RuntimeError("boom") if q == "bad" else None)
    message = parallel_search_tool(searcher).invoke(
        {"name": "search", "args": {"query_list": ["ok", "bad"]}, "id": "1", "type": "tool_call"}
    )
    assert "[ok]\nDoc 1(Title: Title ok)" in message.content
    assert message.artifact["errors"][0] is None
    assert "boom" in message.artifact["errors"][1]


class PageRetriever(BaseRetriever):
    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        return [Document(page_content=f"About {query}.", metadata={"title": query.title()})]


def test_a_langchain_retriever_works_as_the_searcher() -> None:
    text = parallel_search_tool(PageRetriever()).invoke({"query_list": ["a b", "c"]})
    assert "[a b]\nDoc 1(Title: A B) About a b." in text and "[c]\nDoc 1(Title: C)" in text


def test_a_searcher_that_is_not_one_fails_when_the_tool_is_built() -> None:
    with pytest.raises(UserError, match="batch_search"):
        parallel_search_tool(object())  # type: ignore[arg-type]


def test_the_tool_keeps_the_passage_budget() -> None:
    long = Passage("1", "T", "First sentence. Second sentence. Third sentence.")

    class One:
        def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
            return [[long] for _ in queries]

    text = parallel_search_tool(One(), passage_sentences=1).invoke({"query_list": ["q"]})
    assert "Doc 1(Title: T) First sentence." in text and "Second" not in text


def test_the_turn_limit_forbids_tool_calls_the_way_each_real_provider_reads_it() -> None:
    from langchain.agents.middleware.types import ModelRequest
    from langchain_anthropic import ChatAnthropic
    from langchain_google_genai import ChatGoogleGenerativeAI
    from langchain_openai import ChatOpenAI

    tool = parallel_search_tool(CountingSearcher())
    messages = [
        HumanMessage("q?"),
        search_call({"query_list": ["a"]}),
        ToolMessage("x", tool_call_id="call_1"),
    ]
    sent: dict[str, Any] = {}
    models = {
        "anthropic": ChatAnthropic(model="claude-sonnet-4-5", api_key="not-used"),
        "anthropic-thinking": ChatAnthropic(
            model="claude-sonnet-4-5",
            api_key="not-used",
            thinking={"type": "enabled", "budget_tokens": 2048},
        ),
        "openai": ChatOpenAI(model="gpt-4o-mini", api_key="not-used"),
        "google": ChatGoogleGenerativeAI(model="gemini-2.5-flash", google_api_key="not-used"),
    }
    for label, model in models.items():
        request = ModelRequest(model=model, messages=messages, tools=[tool], state={}, runtime=None)
        limited = SearchTurnLimitMiddleware(max_turns=1).model_request(request)
        # What create_agent does with the request: bind the tools with its tool_choice; then
        # what the provider class would send, from its own payload method (no network).
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a choice the binding would drop warns
            kwargs = model.bind_tools([tool], tool_choice=limited.tool_choice).kwargs
        if isinstance(model, ChatGoogleGenerativeAI):
            config = model._prepare_request(messages, **kwargs)["config"]
            sent[label] = config.tool_config.function_calling_config.mode.value
        else:
            sent[label] = model._get_request_payload(messages, **kwargs)["tool_choice"]
    # Anthropic's API form; its "none" string would force a call of a tool named "none" (and
    # with thinking on, be dropped).
    assert sent == {
        "anthropic": {"type": "none"},
        "anthropic-thinking": {"type": "none"},
        "openai": "none",
        "google": "NONE",
    }
    # Under the limit the request is left as it came.
    request = ModelRequest(model=models["openai"], messages=messages[:1], tools=[tool], state={})
    assert SearchTurnLimitMiddleware(max_turns=1).model_request(request) is request


def test_an_old_langchain_is_told_to_upgrade_not_to_install_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.metadata

    from langgraph_parallel.parallel_search import agent_middleware as middleware

    monkeypatch.setattr(importlib.metadata, "version", lambda name: "1.2.8")
    message = middleware._missing_langchain(ImportError("cannot import name"))
    assert "langchain 1.2.8 is installed" in message
    assert "pip install -U 'langchain>=1.2.9'" in message

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    message = middleware._missing_langchain(ImportError("No module named 'langchain'"))
    assert "pip install -e '" in message and "[agents]'" in message
