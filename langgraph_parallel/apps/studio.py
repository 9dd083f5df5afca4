"""The graphs ``langgraph dev`` and LangGraph Studio serve, configured from the environment.

``langgraph.json`` points at thin modules in ``graphs/``; each calls :func:`studio_graph`, so
the model and search settings are read in one place. Nothing heavy happens at import time:
the in-process engine starts on the first model call and the corpus index is built on the
first search, so ``langgraph dev`` comes up in seconds.

Environment:
    OPENAI_BASE_URL: Run the model on this vLLM server (e.g. the one
        ``langgraph-parallel serve`` starts: ``http://127.0.0.1:8000/v1``) with
        ``ChatVLLMServer``, which prompts it as the in-process engine would, instead of
        starting an engine in the Studio process. A deployment from ``langgraph.json``
        installs no engine, so it needs this; without it and without vLLM, building a graph
        fails at once, naming it.
    LANGGRAPH_PARALLEL_MODEL: Model name: the embedded ``smollm2-parallel`` (default: SmolLM2
        with the ParallelSearch adapter; ``smollm2-sequential`` for ``sequential_search``),
        ``smollm2`` or ``gemma3``, a model folder, or the served model name when
        ``OPENAI_BASE_URL`` is set.
    LANGGRAPH_PARALLEL_ENGINE: JSON object of ``vllm.LLM`` settings for the in-process engine,
        over the defaults, e.g. ``{"kv_cache_memory_bytes": 536870912}`` on a small machine.
    LANGGRAPH_PARALLEL_SEARCH: A corpus index kind, ``hybrid`` (default; BM25 and dense
        rankings fused), ``bm25`` or ``dense`` (``faiss`` is an older name for it), over the
        bundled HotpotQA corpus; or ``tavily`` (web search; needs ``TAVILY_API_KEY``, else
        building the graph fails at once).
    LANGGRAPH_PARALLEL_CORPUS: A corpus to index instead of the bundled one: a ``.jsonl(.gz)``
        file or a folder of ``.txt``/``.md`` files.
    LANGGRAPH_PARALLEL_INDEX_LIMIT: Index only the first N corpus rows (a quick start).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel

from langgraph_parallel.apps.registry import STUDIO_IDS, build_graph, default_model
from langgraph_parallel.errors import UserError, install_hint
from langgraph_parallel.retrieval.documents import Passage
from langgraph_parallel.retrieval.search import Searcher

__all__ = [
    "STUDIO_GRAPHS",
    "LazySearcher",
    "model_from_env",
    "search_from_env",
    "studio_graph",
]


def model_from_env(
    env: Mapping[str, str] | None = None, default: str | None = None
) -> BaseChatModel:
    """Return the chat model the environment asks for (see the module docstring).

    Args:
        env: Environment variables; ``os.environ`` when ``None``.
        default: Model when ``LANGGRAPH_PARALLEL_MODEL`` is unset; ``None``: ``smollm2-parallel``.

    Raises:
        UserError: No ``OPENAI_BASE_URL`` and no in-process engine installed (a deployment
            from ``langgraph.json``), so a graph fails when it is built, not on its first call.
    """
    env = os.environ if env is None else env
    if not env.get("OPENAI_BASE_URL") and importlib.util.find_spec("vllm") is None:
        raise UserError(
            "No model to run: set OPENAI_BASE_URL to a vLLM server's OpenAI address (e.g. "
            "`langgraph-parallel serve` on a machine with the engine: http://HOST:8000/v1), or "
            f"install the in-process engine here: {install_hint('cpu')} (the gpu extra on a "
            "CUDA machine)."
        )
    from langgraph_parallel.models.embedded import DEFAULT_EMBEDDED

    name = env.get("LANGGRAPH_PARALLEL_MODEL") or default or DEFAULT_EMBEDDED
    from langgraph_parallel.apps.registry import load_model
    from langgraph_parallel.models.engine import env_engine_kwargs

    # Not checked here: the embedded model is converted on the first call, not at import.
    engine_kwargs = env_engine_kwargs(env)
    return load_model(name, base_url=env.get("OPENAI_BASE_URL"), engine_kwargs=engine_kwargs)


class LazySearcher:
    """A :class:`Searcher` built by ``factory`` on the first search, once, then reused.

    Args:
        factory: Returns the real searcher (e.g. builds a FAISS index).
        description: Named in ``repr`` so a Studio user can tell what will be searched.
    """

    def __init__(self, factory: Callable[[], Searcher], description: str) -> None:
        self._factory = factory
        self._searcher: Searcher | None = None
        self._lock = threading.Lock()  # parallel branches must not build the index twice
        self.description = description

    def __repr__(self) -> str:
        return f"LazySearcher({self.description})"

    def get(self) -> Searcher:
        """Return the real searcher, building it on the first call."""
        with self._lock:
            if self._searcher is None:
                self._searcher = self._factory()
            return self._searcher

    def batch_search(self, queries: Sequence[str], k: int = 3) -> list[list[Passage]]:
        """Search with the real searcher (see :class:`Searcher`)."""
        return self.get().batch_search(queries, k)


def _index_limit(env: Mapping[str, str]) -> int | None:
    raw = env.get("LANGGRAPH_PARALLEL_INDEX_LIMIT")
    if not raw:
        return None
    try:
        limit = int(raw)
    except ValueError:
        limit = 0
    if limit < 1:
        raise UserError(f"LANGGRAPH_PARALLEL_INDEX_LIMIT must be a positive integer, got {raw!r}.")
    return limit


def search_from_env(env: Mapping[str, str] | None = None) -> Searcher:
    """Return the searcher the environment asks for (see the module docstring).

    Raises:
        UserError: ``tavily`` without ``TAVILY_API_KEY``, an unknown search kind, a bad index
            limit, or a dense or hybrid index without the encoder weights package, so a
            misconfigured graph fails when it is built, not mid-run.
    """
    env = os.environ if env is None else env
    from langgraph_parallel.retrieval.indexes import DEFAULT_INDEX, INDEX_KINDS, corpus_index

    kind = (env.get("LANGGRAPH_PARALLEL_SEARCH") or DEFAULT_INDEX).strip().lower()
    if kind == "tavily":
        from langgraph_parallel.retrieval.tavily import TavilySearcher

        return TavilySearcher(api_key=env.get("TAVILY_API_KEY") or None)
    kind = "dense" if kind == "faiss" else kind  # the name before BM25 and hybrid existed
    if kind not in INDEX_KINDS:
        allowed = ", ".join(f"'{k}'" for k in (*INDEX_KINDS, "tavily"))
        raise UserError(f"LANGGRAPH_PARALLEL_SEARCH must be one of {allowed}; got {kind!r}.")
    limit = _index_limit(env)
    if kind != "bm25":
        # Queries are encoded here even over the shipped corpus embeddings; the weights come
        # from a package that is installed without its dependencies (not an extra).
        from langgraph_parallel.retrieval.embeddings import default_model_dir

        default_model_dir()
    corpus = env.get("LANGGRAPH_PARALLEL_CORPUS") or None
    what = corpus or "the bundled HotpotQA corpus"
    return LazySearcher(
        lambda: corpus_index(corpus, limit=limit, kind=kind),
        f"{kind} index over {what}, limit={limit}",
    )


STUDIO_GRAPHS = STUDIO_IDS
"""Graph id (the key in ``langgraph.json``) -> the registry's graph name it serves."""


def studio_graph(
    graph_id: str,
    *,
    model: BaseChatModel | None = None,
    search: Any = None,
    **options: Any,
) -> Any:
    """Build the graph ``graph_id`` for Studio; model and search default to the environment's.

    Args:
        graph_id: A key of :data:`STUDIO_GRAPHS`; it is also the compiled graph's name.
        model: Use this chat model instead of :func:`model_from_env`.
        search: Use this searcher instead of :func:`search_from_env`.
        **options: Keyword options of the graph's factory.

    Raises:
        UserError: Unknown id or a misconfigured environment.
    """
    if graph_id not in STUDIO_GRAPHS:
        raise UserError(
            f"Unknown graph id {graph_id!r}; choose one of: {', '.join(STUDIO_GRAPHS)}."
        )
    search = search_from_env() if search is None else search  # fails fast, before the model
    if model is None:
        # The baseline graph runs the baseline policy unless the environment names a model.
        model = model_from_env(default=default_model(STUDIO_IDS[graph_id]))
    return build_graph(STUDIO_IDS[graph_id], model, search, name=graph_id, **options)
