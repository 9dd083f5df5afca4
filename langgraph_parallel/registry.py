"""Named graphs, built the same way by the CLI, the benchmark harness and the Studio modules."""

from __future__ import annotations

from typing import Any, Literal, get_args

from langgraph_parallel.errors import UserError

GraphName = Literal[
    "parallel-search",
    "sequential",
    "direct",
    "parallel-muse",
    "rollouts-majority",
    # ParallelSearch without the engine's structured outputs: the ablation of constrained decoding
    "parallel-search-unconstrained",
]
GRAPH_NAMES: tuple[str, ...] = get_args(GraphName)

DEFAULT_MODELS: dict[str, str] = {
    "parallel-search": "smollm2-parallel",
    "parallel-search-unconstrained": "smollm2-parallel",
    "parallel-muse": "smollm2-parallel",
    "rollouts-majority": "smollm2-parallel",
    # Search-R1: the policy trained on the same questions to search one query per turn.
    "sequential": "smollm2-sequential",
    # Closed book: the untrained base answers from its own knowledge (the trained policies
    # only ever answered after searching).
    "direct": "smollm2",
}
"""The embedded model each named graph runs when no model is given."""


def default_model(graph: str) -> str:
    """Return the embedded model ``graph`` runs by default (see :data:`DEFAULT_MODELS`)."""
    return DEFAULT_MODELS.get(graph, "smollm2-parallel")


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
    if name == "parallel-search-unconstrained":
        return create_parallel_search_graph(
            model, search, decompose=True, constrain=False, **options
        )
    if name == "sequential":
        return create_parallel_search_graph(model, search, decompose=False, **options)
    if name == "direct":
        from langgraph_parallel.direct import DIRECT_OPTIONS, create_direct_graph

        # One option set serves every name (CLI, harness); the direct graph has no search loop.
        kept = {key: value for key, value in options.items() if key in DIRECT_OPTIONS}
        return create_direct_graph(model, **kept)
    if name in ("parallel-muse", "rollouts-majority"):
        from langgraph_parallel.muse_graph import create_parallel_muse_graph, create_rollouts_graph

        if name == "parallel-muse":
            return create_parallel_muse_graph(model, search, **options)
        return create_rollouts_graph(model, search, join="majority", **options)
    raise UserError(f"Unknown graph {name!r}; choose one of: {', '.join(GRAPH_NAMES)}.")
