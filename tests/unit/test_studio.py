"""langgraph.json, the graphs/ modules and the environment settings they read."""

from __future__ import annotations

import json
import runpy
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from langgraph_parallel.apps.studio import (
    STUDIO_GRAPHS,
    LazySearcher,
    model_from_env,
    search_from_env,
    studio_graph,
)
from langgraph_parallel.errors import UserError
from langgraph_parallel.models.served_chat import ChatVLLMServer
from langgraph_parallel.retrieval.documents import Passage
from langgraph_parallel.retrieval.tavily import TavilySearcher

REPO = Path(__file__).resolve().parents[2]


def test_langgraph_json_serves_every_studio_graph() -> None:
    config = json.loads((REPO / "langgraph.json").read_text())
    assert config["dependencies"][0] == "."  # the rest: tests/unit/test_deploy_config.py
    assert set(config["graphs"]) == set(STUDIO_GRAPHS)
    for graph_id, target in config["graphs"].items():
        path, _, attr = target.partition(":")
        assert attr == "graph" and (REPO / path).is_file()
        assert f'studio_graph("{graph_id}")' in (REPO / path).read_text()
    assert not (REPO / "graphs" / "__init__.py").exists()  # not an importable package


def test_graph_module_builds_without_starting_engine_or_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OPENAI_BASE_URL", "LANGGRAPH_PARALLEL_SEARCH", "LANGGRAPH_PARALLEL_MODEL"):
        monkeypatch.delenv(name, raising=False)
    from langgraph_parallel.models import engine
    from langgraph_parallel.retrieval import indexes as corpus_indexes

    engines, indexes = dict(engine._ENGINES), dict(corpus_indexes._CACHE)
    graph = runpy.run_path(str(REPO / "graphs" / "parallel_search.py"))["graph"]
    assert graph.name == "parallel_search"
    assert {"think", "fan_out", "search", "observe", "answer"} <= set(graph.get_graph().nodes)
    # Building served the graph without starting an engine or building an index.
    assert engines == engine._ENGINES and indexes == corpus_indexes._CACHE
    lazy = search_from_env({})
    assert isinstance(lazy, LazySearcher) and lazy._searcher is None


def test_model_from_env_uses_the_server_when_openai_base_url_is_set() -> None:
    model = model_from_env(
        {"OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "LANGGRAPH_PARALLEL_MODEL": "served"}
    )
    # The server client that prompts as the in-process engine does (a raw policy stays raw).
    assert isinstance(model, ChatVLLMServer)
    assert model.base_url == "http://127.0.0.1:9/v1" and model.model == "served"
    assert model.logprobs and model.top_logprobs == 16
    assert model.style == "chat"  # "served" names no model this machine has
    policy = model_from_env({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert isinstance(policy, ChatVLLMServer) and policy.model == "smollm2-parallel"
    assert (policy.style, policy.prompt_kind) == ("raw", "rules")


def test_model_from_env_defaults_to_the_embedded_engine_lazily() -> None:
    engine = '{"kv_cache_memory_bytes": 536870912}'
    model = model_from_env(
        {"LANGGRAPH_PARALLEL_MODEL": "gemma3", "LANGGRAPH_PARALLEL_ENGINE": engine}
    )
    assert model.engine_kwargs == {"kv_cache_memory_bytes": 536870912}  # type: ignore[attr-defined]
    assert type(model).__name__ == "ChatVLLM" and model.model == "gemma3"  # type: ignore[attr-defined]
    assert model._worker is None  # type: ignore[attr-defined]


def test_tavily_without_key_fails_the_graph_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LANGGRAPH_PARALLEL_SEARCH", "tavily")
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(UserError, match="TAVILY_API_KEY"):
        studio_graph("parallel_search")
    searcher = search_from_env({"LANGGRAPH_PARALLEL_SEARCH": "tavily", "TAVILY_API_KEY": "tvly-x"})
    assert isinstance(searcher, TavilySearcher)


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LANGGRAPH_PARALLEL_SEARCH": "bing"}, "'hybrid', 'bm25', 'dense', 'tavily'"),
        ({"LANGGRAPH_PARALLEL_INDEX_LIMIT": "lots"}, "positive integer"),
        ({"LANGGRAPH_PARALLEL_INDEX_LIMIT": "0"}, "positive integer"),
    ],
)
def test_bad_search_settings_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(UserError, match=message):
        search_from_env(env)


@pytest.mark.parametrize("raw", ["[1]", "not json", '"text"'])
def test_bad_engine_settings_name_the_variable(raw: str) -> None:
    with pytest.raises(UserError, match="LANGGRAPH_PARALLEL_ENGINE must be a JSON object"):
        model_from_env({"LANGGRAPH_PARALLEL_ENGINE": raw})


def test_corpus_setting_is_indexed_lazily() -> None:
    lazy = search_from_env(
        {"LANGGRAPH_PARALLEL_CORPUS": "/nowhere.jsonl", "LANGGRAPH_PARALLEL_INDEX_LIMIT": "5"}
    )
    assert isinstance(lazy, LazySearcher) and "/nowhere.jsonl, limit=5" in repr(lazy)
    with pytest.raises(UserError, match="not found"):  # only now is the corpus read
        lazy.batch_search(["q"], 1)


def test_unknown_graph_id() -> None:
    with pytest.raises(UserError, match="parallel_search"):
        studio_graph("nope", model=object(), search=object())  # type: ignore[arg-type]


def test_lazy_searcher_builds_once_under_concurrent_first_use() -> None:
    builds: list[int] = []

    class Built:
        def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
            return [[Passage(q, q, q)] for q in queries]

    def factory() -> Built:
        builds.append(1)
        return Built()

    lazy = LazySearcher(factory, "test")
    threads = [threading.Thread(target=lazy.batch_search, args=(["q"], 1)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert builds == [1] and lazy.batch_search(["a"], 1)[0][0].title == "a"


def test_served_sequential_graph_keeps_its_settings_under_an_empty_context() -> None:
    from tests.fakes import CountingSearcher, ScriptedChatModel

    model = ScriptedChatModel(script=["<search> a ## b </search>", "<answer> x </answer>"])
    searcher = CountingSearcher()
    graph = studio_graph("sequential_search", model=model, search=searcher)
    graph.invoke({"question": "q?"}, context={})  # what the LangGraph API server passes
    assert searcher.queries == ["a ## b"]  # one query per turn, as without a context


def test_each_studio_graph_runs_its_own_default_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    import langgraph_parallel.apps.studio as studio

    built: dict[str, str] = {}
    monkeypatch.delenv("LANGGRAPH_PARALLEL_MODEL", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setattr(
        studio, "build_graph", lambda graph, model, search, name, **_: (graph, name, model.model)
    )
    for graph_id in studio.STUDIO_GRAPHS:
        built[graph_id] = studio_graph(graph_id, search=object())
    assert built == {  # the registry's graph, compiled under the Studio id, on its own policy
        "parallel_search": ("parallel-search", "parallel_search", "smollm2-parallel"),
        "sequential_search": ("sequential", "sequential_search", "smollm2-sequential"),
        "parallel_muse": ("parallel-muse", "parallel_muse", "smollm2-parallel"),
        "parallel_search_agent": (
            "parallel-search-agent",
            "parallel_search_agent",
            "smollm2-parallel",
        ),
        "parallel_muse_agent": ("parallel-muse-agent", "parallel_muse_agent", "smollm2-parallel"),
    }
    monkeypatch.setenv("LANGGRAPH_PARALLEL_MODEL", "gemma3")
    assert studio_graph("sequential_search", search=object())[2] == "gemma3"


def test_the_agent_graph_is_create_agent_with_parallel_search() -> None:
    from langchain_core.messages import HumanMessage

    from tests.fakes import CountingSearcher, ToolCallingChatModel, search_call

    model = ToolCallingChatModel(script=[search_call({"query_list": ["a", "b"]}), "done"])
    searcher = CountingSearcher()
    graph = studio_graph("parallel_search_agent", model=model, search=searcher)
    assert graph.name == "parallel_search_agent"
    assert {"model", "tools"} <= set(graph.get_graph().nodes)
    final = graph.invoke({"messages": [HumanMessage("a and b?")]}, context={})
    assert searcher.batches == [["a", "b"]]
    assert final["counters"]["sub_queries"] == 2 and final["messages"][-1].content == "done"
    assert "query_list" in model.calls[0][0].content  # the middleware's instruction


def test_the_muse_agent_graph_forks_the_create_agent_app() -> None:
    from langchain_core.messages import HumanMessage

    from tests.fakes import CountingSearcher, SeededAgentModel, agent_reply

    def reply(seed: object, step: int) -> object:
        if step == 0:
            return agent_reply("look", queries=["a", "b"], spread={"exploration": 4})
        return agent_reply("so", answer="done", spread={"answer": 2})

    model = SeededAgentModel(reply=reply)
    graph = studio_graph("parallel_muse_agent", model=model, search=CountingSearcher())
    assert graph.name == "parallel_muse_agent"
    assert {"router", "rollout", "report", "aggregate"} <= set(graph.get_graph().nodes)
    # Its one search is step 0: min_branch_step=0 lets the fork start there.
    context = {"budget": 2, "min_branch_step": 0}
    final = graph.invoke({"messages": [HumanMessage("a and b?")]}, context=context)
    assert [t["parent"] for t in final["trajectories"]] == [None, "t0"]
    assert final["answer"] == "done" and final["messages"][-1].content == "done"
