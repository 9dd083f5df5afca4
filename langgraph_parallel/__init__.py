"""langgraph-parallel: parallel thinking for LangGraph search agents.

ParallelSearch (decompose a question into independent sub-queries and search them concurrently
with ``Send``) and ParallelMuse (fork the agent at its most uncertain steps), as graphs and as
parts you can add to your own graphs; ParallelSearch also as a tool and a middleware for
langchain's ``create_agent`` (``parallel_search_tool``, ``ParallelSearchMiddleware``). The names
here are the ones most programs need; the rest live in their packages: ``agent`` (the step loop,
its state and nodes), ``parallel_search``, ``parallel_muse``, ``baselines``, ``protocol``,
``models``, ``retrieval``, ``rewards``, ``eval``.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph_parallel._version import __version__
    from langgraph_parallel.agent.run import run_question
    from langgraph_parallel.baselines.direct import create_direct_graph
    from langgraph_parallel.baselines.rollouts import independent_rollouts
    from langgraph_parallel.errors import UserError
    from langgraph_parallel.models.served_chat import ChatVLLMServer
    from langgraph_parallel.models.server import chat_openai_for_server
    from langgraph_parallel.models.vllm_chat import ChatVLLM
    from langgraph_parallel.parallel_muse.context import MuseContext
    from langgraph_parallel.parallel_muse.graph import create_parallel_muse_graph
    from langgraph_parallel.parallel_search.agent_tool import parallel_search_tool
    from langgraph_parallel.parallel_search.context import SearchContext
    from langgraph_parallel.parallel_search.graph import (
        add_parallel_search,
        create_fan_out_search_graph,
        create_parallel_search_graph,
    )
    from langgraph_parallel.parallel_search.loop import parallel_search_rollouts
    from langgraph_parallel.parallel_search.middleware import ParallelSearchMiddleware
    from langgraph_parallel.parallel_search.state import FanOutState, ParallelSearchState
    from langgraph_parallel.retrieval import CorpusIndex, Passage, Searcher, default_index

# Imported on first use (PEP 562), not here: vLLM imports our plugin
# (``models/vllm_plugin.py``) into each of its processes, and every subpackage import runs this
# file first; importing the graphs here would load LangGraph and the retrieval stack into every
# vLLM engine and server process (~1 s and ~1300 modules measured). The imports above are for
# type checkers.
_EXPORTS = {
    "__version__": "langgraph_parallel._version",
    "run_question": "langgraph_parallel.agent.run",
    "create_direct_graph": "langgraph_parallel.baselines.direct",
    "independent_rollouts": "langgraph_parallel.baselines.rollouts",
    "UserError": "langgraph_parallel.errors",
    "ChatVLLMServer": "langgraph_parallel.models.served_chat",
    "chat_openai_for_server": "langgraph_parallel.models.server",
    "ChatVLLM": "langgraph_parallel.models.vllm_chat",
    "MuseContext": "langgraph_parallel.parallel_muse.context",
    "create_parallel_muse_graph": "langgraph_parallel.parallel_muse.graph",
    "add_parallel_search": "langgraph_parallel.parallel_search.graph",
    "create_fan_out_search_graph": "langgraph_parallel.parallel_search.graph",
    "create_parallel_search_graph": "langgraph_parallel.parallel_search.graph",
    "parallel_search_tool": "langgraph_parallel.parallel_search.agent_tool",
    "parallel_search_rollouts": "langgraph_parallel.parallel_search.loop",
    "ParallelSearchMiddleware": "langgraph_parallel.parallel_search.middleware",
    "SearchContext": "langgraph_parallel.parallel_search.context",
    "FanOutState": "langgraph_parallel.parallel_search.state",
    "ParallelSearchState": "langgraph_parallel.parallel_search.state",
    "CorpusIndex": "langgraph_parallel.retrieval",
    "Passage": "langgraph_parallel.retrieval",
    "Searcher": "langgraph_parallel.retrieval",
    "default_index": "langgraph_parallel.retrieval",
}

__all__ = [
    "ChatVLLM",
    "ChatVLLMServer",
    "CorpusIndex",
    "FanOutState",
    "MuseContext",
    "ParallelSearchMiddleware",
    "ParallelSearchState",
    "Passage",
    "SearchContext",
    "Searcher",
    "UserError",
    "add_parallel_search",
    "chat_openai_for_server",
    "create_direct_graph",
    "create_fan_out_search_graph",
    "create_parallel_muse_graph",
    "create_parallel_search_graph",
    "default_index",
    "independent_rollouts",
    "parallel_search_rollouts",
    "parallel_search_tool",
    "run_question",
    "__version__",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module 'langgraph_parallel' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
