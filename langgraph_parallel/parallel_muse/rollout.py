"""The ParallelMuse agent rollout: think -> search -> observation ... -> answer, from a prefix.

One ``rollout`` node call runs one whole trajectory in a loop (the same action language, prompts
and :class:`~langgraph_parallel.parallel_search.search.SearchNode` as ParallelSearch) and returns
it as a JSON-serialisable :class:`Trajectory`. A branch starts from ``messages[:i]`` of its
parent, copied verbatim: messages are plain ``{"role", "content"}`` dicts with no ids or
timestamps, so the prompt the engine sees for the branch begins with exactly the parent's tokens
and is served from the prefix cache.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.context import run_context
from langgraph_parallel.agent.state import SubQuery, add_counters
from langgraph_parallel.agent.step import (
    call_step,
    first_prompt,
    prompt_style,
    raw_prompt_kind,
    step_options,
)
from langgraph_parallel.errors import call_with_retry, clean_text, reported_error
from langgraph_parallel.parallel_muse.context import MuseContext
from langgraph_parallel.parallel_muse.regions import region_spans
from langgraph_parallel.parallel_muse.state import Branch, Trajectory
from langgraph_parallel.parallel_muse.uncertainty import Step
from langgraph_parallel.parallel_search.search import SearchNode
from langgraph_parallel.protocol import (
    INVALID_ACTION_OBSERVATION,
    cap_queries,
    format_observation,
)

__all__ = ["RolloutNode", "to_messages"]


def to_messages(messages: list[dict[str, str]]) -> list[BaseMessage]:
    """Turn stored ``{"role", "content"}`` dicts into LangChain messages (no ids)."""
    return [
        AIMessage(content=m["content"]) if m["role"] == "assistant" else HumanMessage(m["content"])
        for m in messages
    ]


class RolloutNode:
    """Run one trajectory from a :class:`Branch` payload to an answer or ``max_turns``.

    Args:
        model: Any LangChain chat model; token logprobs are read from
            ``response_metadata["logprobs"]["content"]`` when present.
        search: The search node shared with ParallelSearch (timeouts and failures become
            observations).
        defaults: Settings used when the run passes no :class:`MuseContext`.
        retry: Retries of transient model errors, call by call (retrying the node would repeat
            the whole trajectory); a call that still fails ends this trajectory only.
    """

    def __init__(
        self,
        model: BaseChatModel,
        search: SearchNode,
        defaults: MuseContext,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.model = model
        self.search = search
        self.defaults = defaults
        self.retry = retry

    def __call__(self, branch: Branch, runtime: Runtime[Any]) -> dict[str, Any]:
        """Return ``{"trajectories": [trajectory], "counters": its counters}``."""
        ctx = run_context(runtime, self.defaults)
        messages = [dict(m) for m in branch["messages"]]
        if not messages:
            question = clean_text(branch["question"])
            style = prompt_style(self.model, ctx)
            prompt = first_prompt(question, style, ctx, raw_prompt_kind(self.model))
            messages.append({"role": "user", "content": prompt})
        steps, counters = list(branch["steps"]), {"llm_calls": 0}
        answer, reason = None, f"max_turns: {ctx.max_turns} model steps used without an answer"
        sampling = {"temperature": ctx.temperature, "top_p": ctx.top_p, "seed": branch["seed"]}
        options = step_options(self.model, ctx, **sampling)
        while len(steps) < ctx.max_turns:
            try:
                call = partial(call_step, self.model, to_messages(messages), options)
                step = call_with_retry(call, self.retry)
            except Exception as exc:  # one failed trajectory must not end the other branches
                reason = f"model_error: {reported_error(exc)}"
                break
            text, action = step.text, step.action
            counters = add_counters(counters, step.counters)
            regions = {name: [list(s) for s in spans] for name, spans in region_spans(text).items()}
            steps.append(
                Step(
                    text=text,
                    logprobs=step.logprobs,
                    regions=regions,
                    usage=step.usage,
                    action=action.kind,
                    message_index=len(messages),
                    origin=branch["id"],
                )
            )
            messages.append({"role": "assistant", "content": text})
            if action.kind == "answer":
                answer, reason = action.answer, "answered"
                break
            if len(steps) >= ctx.max_turns:
                break  # a search chosen at the last step has no step left to read its results
            if action.kind == "search":
                observation, searched = self._observe(list(action.queries), len(steps), runtime)
                counters = add_counters(counters, {"turns": 1, "sub_queries": searched})
            else:
                observation = INVALID_ACTION_OBSERVATION
            messages.append({"role": "user", "content": observation})
        trajectory = Trajectory(
            question=branch["question"],
            id=branch["id"],
            index=branch["index"],
            parent=branch["parent"],
            branch_step=branch["branch_step"],
            round=branch["round"],
            seed=branch["seed"],
            messages=messages,
            steps=steps,
            messages_prefix_len=len(branch["messages"]),
            answer=answer,
            stop_reason=reason,
            counters=counters,
        )
        return {"trajectories": [trajectory], "counters": counters}

    def _observe(self, queries: list[str], turn: int, runtime: Runtime[Any]) -> tuple[str, int]:
        ctx = run_context(runtime, self.defaults)
        if not ctx.decompose:
            queries = [" ## ".join(queries)]
        run, skipped = cap_queries(queries, ctx.max_parallel_queries)
        # Sub-queries run one after the other: a closed-corpus search takes milliseconds, and
        # the parallelism that matters here is the branches' model calls.
        results = [
            self.search(SubQuery(turn=turn, index=i, query=q), runtime)["search_results"]
            for i, q in enumerate(run)
        ]
        pairs = [(r[0]["query"], r[0]["text"]) for r in results]
        return format_observation(pairs, skipped, limit=ctx.max_parallel_queries), len(run)
