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
    from langgraph_parallel.agent.context import SearchContext
    from langgraph_parallel.agent.run import run_question
    from langgraph_parallel.agent.state import ParallelSearchState
    from langgraph_parallel.baselines.direct import create_direct_graph
    from langgraph_parallel.errors import UserError
    from langgraph_parallel.models.served_chat import ChatVLLMServer
    from langgraph_parallel.models.server import chat_openai_for_server
    from langgraph_parallel.models.vllm_chat import ChatVLLM
    from langgraph_parallel.parallel_muse.context import MuseContext
    from langgraph_parallel.parallel_muse.graph import (
        add_parallel_muse,
        create_parallel_muse_graph,
        create_rollouts_graph,
    )
    from langgraph_parallel.parallel_search.agent_tool import parallel_search_tool
    from langgraph_parallel.parallel_search.graph import (
        add_parallel_search,
        create_fan_out_search_graph,
        create_parallel_search_graph,
    )
    from langgraph_parallel.parallel_search.middleware import ParallelSearchMiddleware
    from langgraph_parallel.retrieval import CorpusIndex, Searcher, default_index

# Imported on first use (PEP 562), not here: vLLM imports our plugin
# (``models/vllm_plugin.py``) into each of its processes, and every subpackage import runs this
# file first; importing the graphs here would load LangGraph and the retrieval stack into every
# vLLM engine and server process (~1 s and ~1300 modules measured). The imports above are for
# type checkers.
_EXPORTS = {
    "SearchContext": "langgraph_parallel.agent.context",
    "run_question": "langgraph_parallel.agent.run",
    "ParallelSearchState": "langgraph_parallel.agent.state",
    "create_direct_graph": "langgraph_parallel.baselines.direct",
    "UserError": "langgraph_parallel.errors",
    "ChatVLLMServer": "langgraph_parallel.models.served_chat",
    "chat_openai_for_server": "langgraph_parallel.models.server",
    "ChatVLLM": "langgraph_parallel.models.vllm_chat",
    "MuseContext": "langgraph_parallel.parallel_muse.context",
    "add_parallel_muse": "langgraph_parallel.parallel_muse.graph",
    "create_parallel_muse_graph": "langgraph_parallel.parallel_muse.graph",
    "create_rollouts_graph": "langgraph_parallel.parallel_muse.graph",
    "add_parallel_search": "langgraph_parallel.parallel_search.graph",
    "create_fan_out_search_graph": "langgraph_parallel.parallel_search.graph",
    "create_parallel_search_graph": "langgraph_parallel.parallel_search.graph",
    "parallel_search_tool": "langgraph_parallel.parallel_search.agent_tool",
    "ParallelSearchMiddleware": "langgraph_parallel.parallel_search.middleware",
    "CorpusIndex": "langgraph_parallel.retrieval",
    "Searcher": "langgraph_parallel.retrieval",
    "default_index": "langgraph_parallel.retrieval",
}

__all__ = [
    "ChatVLLM",
    "ChatVLLMServer",
    "CorpusIndex",
    "MuseContext",
    "ParallelSearchMiddleware",
    "ParallelSearchState",
    "SearchContext",
    "Searcher",
    "UserError",
    "add_parallel_muse",
    "add_parallel_search",
    "chat_openai_for_server",
    "create_direct_graph",
    "create_fan_out_search_graph",
    "create_parallel_muse_graph",
    "create_parallel_search_graph",
    "create_rollouts_graph",
    "default_index",
    "parallel_search_tool",
    "run_question",
]

_MOVED = {
    "DEFAULT_RETRY_POLICY": "langgraph_parallel.errors",
    "EMBEDDED_MODELS": "langgraph_parallel.models.embedded",
    "embedded_model_dir": "langgraph_parallel.models.embedded",
    "Action": "langgraph_parallel.protocol",
    "format_observation": "langgraph_parallel.protocol",
    "parse_action": "langgraph_parallel.protocol",
    "FanOutNode": "langgraph_parallel.parallel_search.fan_out",
    "ObserveNode": "langgraph_parallel.parallel_search.fan_out",
    "dispatch": "langgraph_parallel.parallel_search.fan_out",
    "SearchNode": "langgraph_parallel.parallel_search.search",
    "ThinkNode": "langgraph_parallel.agent.think",
    "FanOutState": "langgraph_parallel.agent.state",
    "SearchResult": "langgraph_parallel.agent.state",
    "SubQuery": "langgraph_parallel.agent.state",
    "QuestionRun": "langgraph_parallel.agent.run",
    "MiniLMEmbeddings": "langgraph_parallel.retrieval",
    "Passage": "langgraph_parallel.retrieval",
    "RetrieverSearcher": "langgraph_parallel.retrieval",
    "Reward": "langgraph_parallel.rewards",
    "RewardConfig": "langgraph_parallel.rewards",
    "score_response": "langgraph_parallel.rewards",
    "score_steps": "langgraph_parallel.rewards",
    "server_command": "langgraph_parallel.models.server",
    "start_server": "langgraph_parallel.models.server",
    "stop_server": "langgraph_parallel.models.server",
}
"""Names 0.1 exported here, and the module that has them now."""


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value  # later lookups skip this function
        return value
    # An import of a name that moved fails with the line that fixes it. ImportError, not
    # AttributeError: `from langgraph_parallel import X` replaces an AttributeError's message
    # with a bare "cannot import name".
    if name in _MOVED:
        raise ImportError(
            f"langgraph_parallel.{name} moved: use `from {_MOVED[name]} import {name}`."
        )
    raise AttributeError(f"module 'langgraph_parallel' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
