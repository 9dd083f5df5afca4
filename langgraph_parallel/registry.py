"""Named graphs, built the same way by the CLI, the benchmark harness and the Studio modules."""

from __future__ import annotations

from typing import Any, Literal

from langgraph_parallel.errors import UserError

GraphName = Literal["parallel-search", "sequential"]
GRAPH_NAMES: tuple[str, ...] = ("parallel-search", "sequential")


def build_graph(name: str, model: Any, search: Any, **options: Any) -> Any:
    """Build a named graph over ``model`` and ``search``.

    Args:
        name: One of :data:`GRAPH_NAMES`.
        model: A LangChain chat model.
        search: A searcher or LangChain retriever.
        **options: Keyword options of the graph's factory (e.g. ``max_turns``).

    Raises:
        UserError: For an unknown name.
    """
    from langgraph_parallel.graphs import create_parallel_search_graph

    if name == "parallel-search":
        return create_parallel_search_graph(model, search, decompose=True, **options)
    if name == "sequential":
        return create_parallel_search_graph(model, search, decompose=False, **options)
    raise UserError(f"Unknown graph {name!r}; choose one of: {', '.join(GRAPH_NAMES)}.")
