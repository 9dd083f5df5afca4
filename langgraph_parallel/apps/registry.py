"""The one name table: graph names, Studio ids, default models, and how a name becomes a model.

The CLI (``ask``, ``bench``), the benchmark harness and the Studio modules all build graphs and
models through here, so a name means the same thing everywhere. Searchers come from
:func:`~langgraph_parallel.retrieval.indexes.corpus_index` for all of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, get_args

from langgraph_parallel.errors import UserError
from langgraph_parallel.eval.muse_names import INDEPENDENT, PARTIAL

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = [
    "DEFAULT_MODELS",
    "AgentName",
    "GRAPHS",
    "GRAPH_NAMES",
    "GraphName",
    "INDEPENDENT",
    "MUSE_AGENT",
    "MUSE_GRAPHS",
    "PARTIAL",
    "STUDIO_IDS",
    "GraphEntry",
    "build_graph",
    "default_model",
    "load_model",
]

GraphName = Literal[
    "parallel-search",
    "sequential",
    "direct",
    "parallel-muse",
    "rollouts-majority",
    # ParallelSearch without the engine's structured outputs: the ablation of constrained decoding
    "parallel-search-unconstrained",
    # ParallelSearch as langchain's create_agent with our tool and middleware (apps/agent_graph)
    "create-agent",
    # ParallelMuse forking that create_agent app through its checkpointer (parallel_muse/graph)
    "parallel-muse-agent",
]
GRAPH_NAMES: tuple[str, ...] = get_args(GraphName)

MUSE_AGENT: GraphName = "parallel-muse-agent"
"""ParallelMuse over the ``create-agent`` app (it forks the agent's checkpointed threads).
:data:`PARTIAL` and :data:`INDEPENDENT`, the other two ParallelMuse graphs, are named in
:mod:`~langgraph_parallel.eval.muse_names`, where the harness's reports read them too."""


@dataclass(frozen=True)
class GraphEntry:
    """What the registry knows of a named graph besides how to build it.

    Attributes:
        default_model: The embedded model it runs when no model is given.
        muse: A ParallelMuse graph: it takes ``MuseContext`` settings (``bench``'s ParallelMuse
            flags) and its output has trajectories and their tree (``ask --tree``).
        independent: ParallelMuse's baseline, independent rollouts (``rounds=0``).
    """

    default_model: str
    muse: bool = False
    independent: bool = False


GRAPHS: dict[str, GraphEntry] = {
    "parallel-search": GraphEntry("smollm2-parallel"),
    # Search-R1: the policy trained on the same questions to search one query per turn.
    "sequential": GraphEntry("smollm2-sequential"),
    # Closed book: the untrained base answers from its own knowledge (the trained policies
    # only ever answered after searching).
    "direct": GraphEntry("smollm2"),
    PARTIAL: GraphEntry("smollm2-parallel", muse=True),
    INDEPENDENT: GraphEntry("smollm2-parallel", muse=True, independent=True),
    "parallel-search-unconstrained": GraphEntry("smollm2-parallel"),
    "create-agent": GraphEntry("smollm2-parallel"),
    MUSE_AGENT: GraphEntry("smollm2-parallel", muse=True),
}
"""Every name of :data:`GRAPH_NAMES` -> its entry (a test keeps the two the same)."""

MUSE_GRAPHS: tuple[str, ...] = tuple(name for name, entry in GRAPHS.items() if entry.muse)
"""The ParallelMuse graphs: those ``bench``'s ParallelMuse settings and ``ask --tree`` apply to."""

AgentName = Literal["parallel-search-agent"]
"""langchain's ``create_agent`` with ParallelSearch's tool and middleware: a Studio graph, not a
``ask``/``bench`` graph (it takes ``messages``, not a ``question``)."""

STUDIO_IDS: dict[str, GraphName | AgentName] = {
    "parallel_search": "parallel-search",
    "sequential_search": "sequential",
    "parallel_muse": "parallel-muse",
    "parallel_search_agent": "parallel-search-agent",
    "parallel_muse_agent": "parallel-muse-agent",
}
"""Graph id in ``langgraph.json`` (a Python name, also the compiled graph's name) -> the graph."""

DEFAULT_MODELS: dict[str, str] = {name: entry.default_model for name, entry in GRAPHS.items()}
"""The embedded model each named graph runs when no model is given."""


def default_model(graph: str) -> str:
    """Return the embedded model ``graph`` runs by default (see :data:`DEFAULT_MODELS`)."""
    return DEFAULT_MODELS.get(graph, "smollm2-parallel")


def build_graph(graph: str, model: Any, search: Any, /, **options: Any) -> Any:
    """Build a named graph over ``model`` and ``search``.

    Args:
        graph: One of :data:`GRAPH_NAMES`, or ``parallel-search-agent``.
        model: A LangChain chat model.
        search: A searcher or LangChain retriever.
        **options: Keyword options of the graph's factory (e.g. ``max_turns``, ``name``).
            ``retry_policy`` reaches every graph but ``create-agent`` and
            ``parallel-search-agent``, whose model calls are langchain's ``create_agent``'s.

    Raises:
        UserError: For an unknown name.
    """
    from langgraph_parallel.parallel_search.graph import create_parallel_search_graph

    if graph == "parallel-search":
        return create_parallel_search_graph(model, search, decompose=True, **options)
    if graph == "parallel-search-unconstrained":
        return create_parallel_search_graph(
            model, search, decompose=True, constrain=False, **options
        )
    if graph == "sequential":
        return create_parallel_search_graph(model, search, decompose=False, **options)
    if graph == "direct":
        from langgraph_parallel.baselines.direct import DIRECT_OPTIONS, create_direct_graph

        # One option set serves every name (CLI, harness); the direct graph has no search loop.
        kept = {key: value for key, value in options.items() if key in DIRECT_OPTIONS}
        return create_direct_graph(model, **kept)
    if graph in MUSE_GRAPHS:
        from langgraph_parallel.parallel_muse.graph import create_parallel_muse_graph
        from langgraph_parallel.parallel_search.loop import parallel_search_rollouts

        context, door = _muse_settings(options, baseline=GRAPHS[graph].independent)
        if graph != MUSE_AGENT:
            budget = options.get("passage_sentences", "auto")
            rollouts = parallel_search_rollouts(model, search, passage_sentences=budget)
            return create_parallel_muse_graph(rollouts, context=context, **door)
        # The agent's loop settings go into the agent; its threads are read by no one after
        # the join, so they are not kept.
        agent = _search_agent(model, search, options, studio=False, checkpointed=True)
        door.update(model=model, keep_threads=False)
        return create_parallel_muse_graph(agent, context=context, **door)
    if graph in ("parallel-search-agent", "create-agent"):
        studio = graph == "parallel-search-agent"
        agent = _search_agent(model, search, options, studio=studio, checkpointed=False)
        if studio:
            return agent
        from langgraph_parallel.apps.agent_graph import create_agent_question_graph

        return create_agent_question_graph(agent, name=options.get("name"))
    raise UserError(f"Unknown graph {graph!r}; choose one of: {', '.join(GRAPH_NAMES)}.")


_DOOR_OPTIONS = ("retry_policy", "checkpointer", "store", "name")
"""Options of :func:`create_parallel_muse_graph` itself; every other one is a context field."""


def _muse_settings(options: Mapping[str, Any], *, baseline: bool) -> tuple[Any, dict[str, Any]]:
    """Split flat CLI/harness ``options`` into a ``MuseContext`` and the door's own options.

    ``passage_sentences`` is left out: it belongs to the rollouts (``auto`` is resolved
    against the model there); ``baseline`` gives the independent-rollouts context
    (``rounds=0``).
    """
    from langgraph_parallel.baselines.rollouts import independent_rollouts
    from langgraph_parallel.parallel_muse.context import MuseContext

    door = {key: options[key] for key in _DOOR_OPTIONS if key in options}
    left = (*_DOOR_OPTIONS, "passage_sentences")
    fields = {key: value for key, value in options.items() if key not in left}
    known = {f.name for f in dataclasses.fields(MuseContext)}
    if unknown := sorted(set(fields) - known):
        raise ValueError(
            f"Unknown ParallelMuse setting(s) {', '.join(unknown)}; valid ones are the "
            f"MuseContext fields: {', '.join(sorted(known))}."
        )
    return (independent_rollouts if baseline else MuseContext)(**fields), door


def _search_agent(
    model: Any, search: Any, options: dict[str, Any], *, studio: bool, checkpointed: bool
) -> Any:
    """Return ``create_agent`` with ParallelSearch's tool and middleware, under ``options``.

    ``top_k``, ``passage_sentences`` and ``max_turns`` are the graphs' settings, under the
    same names in the tool and the middleware; ``studio`` names the agent ``options["name"]``
    (it is served itself); ``checkpointed`` gives it an ``InMemorySaver`` of its own, which
    ParallelMuse forks it through (a served graph or a subgraph uses its caller's instead).
    """
    from langchain.agents import create_agent
    from langgraph.checkpoint.memory import InMemorySaver

    from langgraph_parallel.parallel_search.agent_tool import parallel_search_tool
    from langgraph_parallel.parallel_search.middleware import ParallelSearchMiddleware

    budget = options.get("passage_sentences", "auto")
    tool = parallel_search_tool(
        search,
        top_k=options.get("top_k", 3),
        passage_sentences=_declared_budget(model) if budget == "auto" else budget,
    )
    return create_agent(
        model,
        tools=[tool],
        middleware=[ParallelSearchMiddleware(max_turns=options.get("max_turns", 4))],
        name=options.get("name") if studio else None,
        checkpointer=InMemorySaver() if checkpointed else None,
    )


def _declared_budget(model: Any) -> int | None:
    """Return the passage budget a model declares, as the graphs' ``passage_sentences="auto"``."""
    from langgraph_parallel.agent.step import passage_budget

    return passage_budget(model)


def load_model(
    name: str,
    *,
    base_url: str | None = None,
    engine_kwargs: Mapping[str, Any] | None = None,
    check: bool = False,
) -> BaseChatModel:
    """Return the chat model called ``name``.

    Args:
        name: An embedded model (``smollm2-parallel``, ``smollm2``, ...), a model or adapter
            folder, or (with ``base_url``) the name a server serves.
        base_url: A vLLM server (``langgraph-parallel serve``): a
            :class:`~langgraph_parallel.models.served_chat.ChatVLLMServer`, prompting as the
            in-process engine would, instead of the in-process engine.
        engine_kwargs: ``vllm.LLM`` settings of the in-process engine.
        check: Resolve the name now (converting an embedded model on first use), so a bad name
            fails before anything slow starts; otherwise the first call resolves it.

    Raises:
        UserError: With ``check``, a name that is no model.
    """
    if base_url:
        from langgraph_parallel.models.served_chat import ChatVLLMServer

        return ChatVLLMServer(base_url=base_url, model=name)
    from langgraph_parallel.models.folders import resolve_model
    from langgraph_parallel.models.vllm_chat import ChatVLLM

    if check:
        resolve_model(name)
    return ChatVLLM(model=name, engine_kwargs=dict(engine_kwargs or {}))
