"""The loop's settings (``context_schema``), knowing neither paper, and how nodes read them.

:class:`LoopContext` holds what the step loop and its search act read; each paper's settings
build on it (ParallelSearch's ``SearchContext`` adds its fan-out cap, ParallelMuse's
``MuseContext`` its branching). Factories take these values as keyword arguments and use them
as defaults; a caller can override them per run with
``graph.invoke(inputs, context={"max_turns": 6})``; fields left out keep the graph's
build-time values (see :func:`with_defaults`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Literal, TypeVar, get_type_hints

from langgraph_parallel.agent.checks import check_search_timeout
from langgraph_parallel.prompts import SEARCH_R1_INSTRUCTION
from langgraph_parallel.protocol import THINK_MAX_CHARS

PromptStyleOption = Literal["auto", "chat", "raw"]
PassageBudgetOption = int | Literal["auto"] | None
"""A factory's ``passage_sentences``: N sentences, ``None`` (whole passages) or ``auto`` (the
model's declared budget, see :func:`~langgraph_parallel.agent.step.passage_budget`)."""


@dataclass(frozen=True, kw_only=True)
class LoopContext:
    """Settings of the step loop: its model steps, and what its search act is asked to do.

    Flat fields, not a nested object: the LangGraph server builds a run's context from the
    fields a request sends (``context={"max_turns": 6}``), so a paper's settings add fields by
    subclassing this class. ``decompose`` is the loop's because the loop's prompt, action
    grammar and reading of a search step take it (:mod:`~langgraph_parallel.prompts`,
    :mod:`~langgraph_parallel.protocol`); the act-wide settings (``top_k``, ``search_timeout``,
    ``passage_sentences``, ``skip_repeats``) are any search act's, so a rollout's run can
    override them whichever act it runs.

    Attributes:
        max_turns: Model steps (think steps, each a search or an answer) per question. With
            ``final_answer_step`` a search chosen at the last of them still runs and one more
            step, allowed only to answer, reads its results: at most ``max_turns + 1`` model
            calls and ``max_turns`` search turns. Without it that search is not run (no step
            is left to read it): at most ``max_turns`` calls and ``max_turns - 1`` turns.
        top_k: Documents per sub-query.
        decompose: ``True`` for ParallelSearch (sub-queries split on ``##``), ``False`` for the
            sequential Search-R1 baseline: same code, one query per turn.
        prompt_style: ``raw`` (few-shot completion prompt, best for small models), ``chat``
            (Search-R1 instruction in a user message), or ``auto`` (ask the model: embedded
            models say ``raw``, everything else gets ``chat``).
        constrain: Constrain each step to the action grammar with the engine's structured
            outputs (regex). ``None``: on for in-process models in ``raw`` style.
        instruction: The chat-style instruction template (``{question}`` placeholder); ``None``
            picks the Search-R1 text plus the decomposition sentence when ``decompose``.
        max_tokens: Token limit of one think step.
        think_max_chars: Most characters of a step's ``<think>`` text when steps are
            constrained to the action grammar (fewer tokens per step, at some cost in accuracy:
            see ``benchmarks/latency``).
        search_timeout: Seconds one sub-query search may take before it is reported as failed;
            above 0 (:func:`~.checks.check_search_timeout`: at 0 every search would time out).
        passage_sentences: Each retrieved passage is shown as its title and its first N
            sentences (``None``: whole passages). Observations are most of the prompt (three
            ~120-token passages per sub-query); HotpotQA's supporting facts are in a
            paragraph's first two sentences 81% of the time (``benchmarks/retrieval/
            passage_budget``). The graph factories default it to the model's own (a trained
            policy's card records the budget it was trained with).
        final_answer_step: After a search at step ``max_turns``, give the model one more step
            that may only answer, as Search-R1 does after its turn loop: the same transcript,
            now ending with that search's observation, constrained where the engine allows it
            to the answer part of the action grammar
            (:func:`~langgraph_parallel.protocol.answer_regex`); see
            :class:`~langgraph_parallel.agent.think.ThinkNode`. ``False`` restores the old end
            (``max_turns: ...``, no answer), so the step's effect can be measured.
        skip_repeats: A sub-query the conversation already searched is not searched again; its
            place in the observation says so (``counters["repeat_skips"]``). ``False`` searches
            it again (a corpus that changes between turns).
    """

    max_turns: int = 4
    top_k: int = 3
    decompose: bool = True
    prompt_style: PromptStyleOption = "auto"
    constrain: bool | None = None
    instruction: str | None = None
    max_tokens: int = 256
    think_max_chars: int = THINK_MAX_CHARS
    search_timeout: float = 60.0
    passage_sentences: int | None = None
    final_answer_step: bool = True
    skip_repeats: bool = True

    def __post_init__(self) -> None:
        for name in ("max_turns", "top_k", "max_tokens", "think_max_chars"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1 (got {getattr(self, name)}).")
        budget = self.passage_sentences
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)):
            raise ValueError(f"passage_sentences must be an integer or None (got {budget!r}).")
        if budget is not None and budget < 1:
            raise ValueError(f"passage_sentences must be at least 1 or None (got {budget}).")
        if self.instruction is not None and "{question}" not in self.instruction:
            raise ValueError("instruction must contain the placeholder {question}.")
        check_search_timeout(self.search_timeout)


ContextT = TypeVar("ContextT")


def run_context(runtime: Any, defaults: ContextT) -> ContextT:
    """Return the run's context when it is of the node's settings type, else ``defaults``.

    The one way nodes read their settings. In our graphs the context is an instance of the
    graph's ``context_schema`` (a :func:`with_defaults` subclass of the settings type), filled
    from the run's ``context=`` and the build-time values. A node added to a user's graph sees
    the user's own context type (or none): its build-time ``defaults`` apply, so every node keeps
    them.
    """
    context = getattr(runtime, "context", None)
    return context if isinstance(context, type(defaults)) else defaults


def loop_settings(context: LoopContext) -> LoopContext:
    """Return the :class:`LoopContext` fields of ``context`` (of a subclass: a paper's)."""
    names = [f.name for f in dataclasses.fields(LoopContext)]
    return LoopContext(**{name: getattr(context, name) for name in names})


def with_defaults(defaults: ContextT, name: str | None = None) -> type[ContextT]:
    """Return a subclass of ``type(defaults)`` whose field defaults are ``defaults``' values.

    A graph's ``context_schema`` must default to the settings the graph was built with: the
    LangGraph server builds the context from whatever fields a request sends (often none), so
    with the base class a ``decompose=False`` graph would silently run with ``decompose=True``.

    Args:
        defaults: A dataclass instance holding the build-time settings.
        name: Class name (shown in Studio's context form).
    """
    base: Any = type(defaults)
    # Resolved hints, not the string annotations: subclasses may live in other modules.
    hints = get_type_hints(base)
    fields = [
        (f.name, hints[f.name], dataclasses.field(default=getattr(defaults, f.name)))
        for f in dataclasses.fields(base)
    ]
    params = base.__dataclass_params__
    schema = dataclasses.make_dataclass(
        name or base.__name__, fields, bases=(base,), frozen=params.frozen, kw_only=True
    )
    schema.__module__ = base.__module__
    return schema


__all__ = [
    "SEARCH_R1_INSTRUCTION",
    "PassageBudgetOption",
    "PromptStyleOption",
    "LoopContext",
    "loop_settings",
    "run_context",
    "with_defaults",
]
