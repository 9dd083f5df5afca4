"""Nodes read settings one way: the run's context when it is theirs, else build-time values."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

from langgraph_parallel.agent.context import LoopContext, run_context
from langgraph_parallel.agent.think import ThinkNode
from langgraph_parallel.parallel_muse.context import MuseContext
from langgraph_parallel.parallel_search.context import SearchContext, search_settings
from tests.fakes import ScriptedChatModel


@dataclass
class UserContext:
    """A user's own graph context: nothing our nodes know."""

    user_id: str = "u1"


def test_run_context_takes_the_runs_settings_only_when_they_are_the_nodes_type() -> None:
    defaults = SearchContext(max_turns=2)
    assert run_context(None, defaults) is defaults
    assert run_context(SimpleNamespace(context=None), defaults) is defaults
    assert run_context(SimpleNamespace(context=UserContext()), defaults) is defaults
    loop = LoopContext(max_turns=2)
    muse = MuseContext(max_turns=5)  # ParallelMuse's settings build on the loop's
    assert run_context(SimpleNamespace(context=muse), loop) is muse
    assert run_context(SimpleNamespace(context=defaults), loop) is defaults
    assert run_context(SimpleNamespace(context=defaults), MuseContext()) is not defaults
    # ParallelMuse's settings are not ParallelSearch's: its runs give an act the loop's fields.
    assert run_context(SimpleNamespace(context=muse), defaults) is defaults


def test_a_turn_reads_the_loop_fields_of_a_loop_context_and_keeps_its_own() -> None:
    defaults = SearchContext(max_parallel_queries=2, top_k=5)
    muse = MuseContext(top_k=1, search_timeout=3.0)
    settings = search_settings(SimpleNamespace(context=muse), defaults)
    assert (settings.top_k, settings.search_timeout, settings.max_parallel_queries) == (1, 3.0, 2)
    assert search_settings(SimpleNamespace(context=UserContext()), defaults) is defaults
    run = SearchContext(max_parallel_queries=3)
    assert search_settings(SimpleNamespace(context=run), defaults) is run


def test_think_inside_a_user_graph_uses_its_build_time_settings() -> None:
    model = ScriptedChatModel(script=["<search> a ## b </search>"])
    node = ThinkNode(model, SearchContext(max_turns=1, final_answer_step=False))
    command = node({"question": "Q?"}, SimpleNamespace(context=UserContext()))  # type: ignore[arg-type]
    # max_turns=1 and no final step from the build-time settings: the only step is the last,
    # so no search runs.
    assert command.goto == "answer"
    assert command.update["stop_reason"].startswith("max_turns: 1")


def test_the_top_level_exports_what_the_docs_import_and_nothing_unknown() -> None:
    import importlib
    import re
    from pathlib import Path

    import pytest

    package = importlib.import_module("langgraph_parallel")
    assert len(package.__all__) <= 24
    assert all(hasattr(package, name) for name in package.__all__)
    root = Path(package.__file__).resolve().parents[1]
    texts = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    texts += sorted((root / "examples").glob("*.py"))
    imported = set()
    for path in texts:
        for names in re.findall(
            r"from langgraph_parallel import (\([^)]*\)|[^\n]+)", path.read_text(encoding="utf-8")
        ):
            names = re.sub(r"#[^\n]*", "", names).strip("() \n")
            imported |= {n.strip().split(" as ")[0] for n in names.split(",") if n.strip()}
    assert imported and imported <= set(package.__all__), imported - set(package.__all__)
    assert {"FanOutState", "create_parallel_muse_graph", "parallel_search_rollouts"} <= set(
        package.__all__
    )
    with pytest.raises(ImportError, match="cannot import name 'ThinkNode'"):
        exec("from langgraph_parallel import ThinkNode", {})
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018
