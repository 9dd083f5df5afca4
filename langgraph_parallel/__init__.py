"""langgraph-parallel: parallel thinking for LangGraph search agents.

ParallelSearch (decompose a question into independent sub-queries and search them concurrently
with ``Send``) and ParallelMuse (fork the agent at its most uncertain steps), as graphs and as
parts you can add to your own graphs. The names here are the ones most programs need; the rest
live in their packages: ``agent`` (the step loop, its state and nodes), ``parallel_search``,
``parallel_muse``, ``baselines``, ``protocol``, ``models``, ``retrieval``, ``rewards``, ``eval``.
"""

from typing import Any

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
from langgraph_parallel.parallel_search.graph import (
    add_parallel_search,
    create_fan_out_search_graph,
    create_parallel_search_graph,
)
from langgraph_parallel.retrieval import CorpusIndex, Searcher, default_index

__all__ = [
    "ChatVLLM",
    "ChatVLLMServer",
    "CorpusIndex",
    "MuseContext",
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
    # An import of a name that moved fails with the line that fixes it. ImportError, not
    # AttributeError: `from langgraph_parallel import X` replaces an AttributeError's message
    # with a bare "cannot import name".
    if name in _MOVED:
        raise ImportError(
            f"langgraph_parallel.{name} moved: use `from {_MOVED[name]} import {name}`."
        )
    raise AttributeError(f"module 'langgraph_parallel' has no attribute {name!r}")
