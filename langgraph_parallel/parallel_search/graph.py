"""Graph factories: ParallelSearch (and its sequential baseline) and the reusable fan-out step."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.checks import check_model
from langgraph_parallel.agent.context import PassageBudgetOption, PromptStyleOption
from langgraph_parallel.agent.loop import create_loop_graph
from langgraph_parallel.agent.state import require_state_keys
from langgraph_parallel.agent.step import passage_budget
from langgraph_parallel.errors import DEFAULT_RETRY_POLICY
from langgraph_parallel.parallel_search.context import SearchContext
from langgraph_parallel.parallel_search.loop import add_fan_out, search_act
from langgraph_parallel.parallel_search.state import FanOutState
from langgraph_parallel.protocol import DEFAULT_MAX_PARALLEL_QUERIES, THINK_MAX_CHARS
from langgraph_parallel.retrieval.search import SearchSource


def create_parallel_search_graph(
    model: BaseChatModel,
    search: SearchSource,
    *,
    max_turns: int = 4,
    max_parallel_queries: int = DEFAULT_MAX_PARALLEL_QUERIES,
    top_k: int = 3,
    decompose: bool = True,
    prompt_style: PromptStyleOption = "auto",
    constrain: bool | None = None,
    max_tokens: int = 256,
    think_max_chars: int = THINK_MAX_CHARS,
    search_timeout: float = 60.0,
    passage_sentences: PassageBudgetOption = "auto",
    final_answer_step: bool = True,
    dedupe_passages: bool = False,
    retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
    checkpointer: Any = None,
    store: Any = None,
    name: str | None = None,
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the ParallelSearch agent: think -> fan_out -> search* -> observe -> ... -> answer.

    ``decompose=False`` builds the sequential Search-R1 baseline from the same nodes: no
    decomposition instruction, one query per turn.

    Args:
        model: Any LangChain chat model (``ChatVLLM`` for the in-process engine, or
            ``ChatVLLMServer(base_url=...)`` for a vLLM server).
        search: A :class:`~langgraph_parallel.retrieval.search.Searcher` (e.g. ``CorpusIndex``)
            or any LangChain ``BaseRetriever``.
        max_turns: Model steps per question (each a search or an answer), plus the final
            answer-only step after a search at the last of them (``final_answer_step``).
        max_parallel_queries: Sub-queries searched per turn; the rest are named as skipped.
        top_k: Documents per sub-query.
        decompose: ParallelSearch (``True``) or the sequential baseline (``False``).
        prompt_style: ``auto``, ``raw`` (few-shot completion) or ``chat``.
        constrain: Constrain steps to the action grammar (``None``: on for ``ChatVLLM`` in
            ``raw`` style).
        max_tokens: Token limit of one step.
        think_max_chars: Most characters of a constrained step's ``<think>`` text.
        search_timeout: Seconds before one sub-query search is reported as failed.
        passage_sentences: Show each retrieved passage as its title and first N sentences;
            ``None``: whole passages; ``auto`` (default): the budget the model declares (a
            trained policy's card records the one it was trained with; see
            :func:`~langgraph_parallel.agent.step.passage_budget`), else whole passages.
        final_answer_step: After a search at step ``max_turns``, run it and give the model one
            more step that may only answer (``counters["final_answer_steps"]`` says it ran);
            ``False``: that search is not run and the run ends ``max_turns: ...``. See
            :class:`~langgraph_parallel.agent.think.ThinkNode`.
        dedupe_passages: List a passage that several sub-queries of a turn found once, under
            the one ranking it highest (``counters["duplicate_passages"]``); off by default,
            as in the tool (``parallel_search_tool``), the policies being trained without it.
        retry_policy: LangGraph retry policy of the ``think`` and ``search`` nodes; transient
            errors only (see :mod:`~langgraph_parallel.errors`). ``None``: no retries.
        checkpointer: Passed to ``compile``.
        store: Passed to ``compile``.
        name: Graph name (default ``parallel_search`` or ``sequential_search``).

    Returns:
        A compiled graph. Input ``{"messages": [...]}`` (the last human message is the
        question, as a chat UI sends it) or ``{"question": str}``; a missing or empty question
        raises :class:`~langgraph_parallel.errors.UserError` when the run starts. Output
        ``answer``, ``stop_reason``, ``counters``, ``search_results``, ``messages`` (the chat:
        the question, each search step as a ``search`` tool call with ``query_list`` and its
        result, the answer) and ``transcript`` (what the model read and wrote; see
        :mod:`~langgraph_parallel.agent.chat`). With a checkpointer, a new human message on a
        finished thread asks a new question there. Per-run overrides:
        ``invoke(..., context={"max_turns": 6})`` (unset fields keep these arguments).

        Its ``recursion_limit`` defaults to one that fits ``max_turns`` turns (about four
        super-steps each) and the final answer-only step. A run given a smaller limit, or a
        larger ``max_turns`` in its context, or started through ``batch`` or a chain (which pass
        LangChain's default of 25), ends with ``stop_reason`` ``recursion_limit: ...`` when no
        step is left for another turn, never with ``GraphRecursionError``.

    Raises:
        UserError: ``model`` is not a chat model (``None``, a name), ``search`` is not a
            searcher, or ``search_timeout`` is not above 0.
    """
    check_model(model, "create_parallel_search_graph(model, search)")
    defaults = SearchContext(
        max_turns=max_turns,
        max_parallel_queries=max_parallel_queries,
        top_k=top_k,
        decompose=decompose,
        prompt_style=prompt_style,
        constrain=constrain,
        max_tokens=max_tokens,
        think_max_chars=think_max_chars,
        search_timeout=search_timeout,
        passage_sentences=passage_budget(model, passage_sentences),
        final_answer_step=final_answer_step,
        dedupe_passages=dedupe_passages,
    )
    act = search_act(search, defaults, retry=retry_policy)
    return create_loop_graph(
        model,
        defaults,
        act,
        retry=retry_policy,
        checkpointer=checkpointer,
        store=store,
        name=name or ("parallel_search" if decompose else "sequential_search"),
    )


def create_fan_out_search_graph(
    search: SearchSource,
    *,
    max_parallel_queries: int = DEFAULT_MAX_PARALLEL_QUERIES,
    top_k: int = 3,
    search_timeout: float = 60.0,
    passage_sentences: int | None = None,
    retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
    name: str = "fan_out_search",
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """Build the fan-out search step alone: ``{"queries": [...]}`` in, ``observation`` out.

    Add it as a node of your own graph (its state keys ``queries``, ``observation`` and
    ``search_results`` are shared with the parent state), or see :func:`add_parallel_search`.
    ``retry_policy`` retries transient search errors (as in :func:`create_parallel_search_graph`).
    ``passage_sentences`` shows each passage's title and first N sentences (``None``: whole
    passages); with no model here, there is no ``auto``: pass the budget your model was
    trained with.
    """
    context = SearchContext(
        max_parallel_queries=max_parallel_queries,
        top_k=top_k,
        search_timeout=search_timeout,
        passage_sentences=passage_sentences,
    )
    builder = StateGraph(FanOutState)
    add_fan_out(builder, search, context, as_message=False, retry=retry_policy)
    builder.add_edge(START, "fan_out")
    builder.add_edge("observe", END)
    return builder.compile(name=name)


def add_parallel_search(
    builder: StateGraph[Any, Any, Any, Any],
    search: SearchSource,
    *,
    name: str = "parallel_search",
    max_parallel_queries: int = DEFAULT_MAX_PARALLEL_QUERIES,
    top_k: int = 3,
    search_timeout: float = 60.0,
    passage_sentences: int | None = None,
    retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
) -> str:
    """Add a fan-out search step to an existing graph builder as one node.

    The parent state needs a ``queries: list[str]`` key (filled by an earlier node) and gets
    ``observation: str`` (the ``<information>`` block) and ``search_results`` back. Wire it with
    ordinary edges: ``builder.add_edge("plan", name)``. The options are those of
    :func:`create_fan_out_search_graph`.

    Returns:
        The node name.

    Raises:
        ValueError: The builder's state has no ``queries`` or ``observation`` key.
    """
    require_state_keys(
        builder, {"queries": "list[str]", "observation": "str"}, "add_parallel_search"
    )
    builder.add_node(
        name,
        create_fan_out_search_graph(
            search,
            max_parallel_queries=max_parallel_queries,
            top_k=top_k,
            search_timeout=search_timeout,
            passage_sentences=passage_sentences,
            retry_policy=retry_policy,
            name=name,
        ),
    )
    return name
