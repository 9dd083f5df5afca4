"""langgraph-parallel: parallel thinking for LangGraph search agents.

ParallelSearch (decompose a question into independent sub-queries and search them concurrently
with ``Send``) and ParallelMuse (fork the agent at its most uncertain steps), as graphs and as
parts you can add to your own graphs.
"""

from langgraph_parallel.agent.context import SearchContext
from langgraph_parallel.agent.run import QuestionRun, run_question
from langgraph_parallel.agent.state import (
    FanOutState,
    ParallelSearchState,
    SearchResult,
    SubQuery,
)
from langgraph_parallel.agent.think import ThinkNode
from langgraph_parallel.errors import DEFAULT_RETRY_POLICY, UserError
from langgraph_parallel.models.embedded import EMBEDDED_MODELS, embedded_model_dir
from langgraph_parallel.models.server import (
    chat_openai_for_server,
    server_command,
    start_server,
    stop_server,
)
from langgraph_parallel.models.vllm_chat import ChatVLLM
from langgraph_parallel.parallel_muse.graph import (
    MuseContext,
    create_parallel_muse_graph,
    create_rollouts_graph,
)
from langgraph_parallel.parallel_search.fan_out import FanOutNode, ObserveNode, dispatch
from langgraph_parallel.parallel_search.graph import (
    add_parallel_search,
    create_fan_out_search_graph,
    create_parallel_search_graph,
)
from langgraph_parallel.parallel_search.search import SearchNode
from langgraph_parallel.protocol import Action, format_observation, parse_action
from langgraph_parallel.retrieval import (
    CorpusIndex,
    MiniLMEmbeddings,
    Passage,
    RetrieverSearcher,
    Searcher,
    default_index,
)
from langgraph_parallel.rewards import Reward, RewardConfig, score_response, score_steps

__all__ = [
    "DEFAULT_RETRY_POLICY",
    "EMBEDDED_MODELS",
    "Action",
    "ChatVLLM",
    "CorpusIndex",
    "FanOutNode",
    "FanOutState",
    "MiniLMEmbeddings",
    "MuseContext",
    "ObserveNode",
    "ParallelSearchState",
    "Passage",
    "QuestionRun",
    "RetrieverSearcher",
    "Reward",
    "RewardConfig",
    "SearchContext",
    "SearchNode",
    "SearchResult",
    "Searcher",
    "SubQuery",
    "ThinkNode",
    "UserError",
    "add_parallel_search",
    "chat_openai_for_server",
    "create_fan_out_search_graph",
    "create_parallel_muse_graph",
    "create_parallel_search_graph",
    "create_rollouts_graph",
    "default_index",
    "dispatch",
    "embedded_model_dir",
    "format_observation",
    "parse_action",
    "run_question",
    "score_response",
    "score_steps",
    "server_command",
    "start_server",
    "stop_server",
]
