"""ParallelMuse's ``aggregate`` node: pick the answer from the trajectories and their reports.

The reports come from ``report`` (:mod:`.report`); the ``reports`` setting of
:class:`MuseContext` picks which trajectories are reported at all.

Join modes of ``aggregate``:

- ``select``: an analyst call reads the numbered reports of the trajectories that answered and
  names one (``<choice>k</choice>``); the answer is that trajectory's own answer, copied, never a
  merge. No call is made when every answer normalises to the same string. Unparsable analyst
  output falls back to ``majority``, recorded in ``aggregation["fallback"]``. Raw-completion
  models with structured outputs (``ChatVLLM``) are constrained to ``<choice>k</choice>``.
- ``majority``: vote over answers normalised with
  :func:`~langgraph_parallel.metrics.normalize_answer`.
- ``weighted``: the same vote, each trajectory weighted by its answer confidence
  (:func:`~.uncertainty.answer_confidence`; 1 when the model gives no logprobs).
- ``evidence``: the same vote, but a trajectory whose answer does not occur in the passages it
  read (its observations) votes half (:func:`supported`). It needs no model call and no
  logprobs: a small policy that cannot judge reports can still tell a copied answer from an
  invented one. Yes/no answers cannot be found in a passage and vote whole.

Vote ties go to the answer reached first (lowest trajectory index). Trajectories without an
answer are left out of votes and of the analyst's reports, but keep their reports and are listed
in ``aggregation["excluded"]``. Report and analyst calls are counted under ``report_*`` and
``aggregate_*`` counters, apart from the agent's ``llm_calls`` and token counters.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.nodes import Blocking, Body, DualNode
from langgraph_parallel.errors import reported_error
from langgraph_parallel.metrics import normalize_answer
from langgraph_parallel.parallel_muse.context import MuseContext, muse_context
from langgraph_parallel.parallel_muse.report import greedy_call, reduction_style
from langgraph_parallel.parallel_muse.state import Trajectory
from langgraph_parallel.parallel_muse.uncertainty import answer_confidence
from langgraph_parallel.prompts import ANALYST_RAW_PRIMER

__all__ = ["AggregateNode", "supported", "vote"]

_CHOICE = re.compile(r"<choice>\s*(\d+)\s*</choice>")
_UNSUPPORTED_WEIGHT = 0.5
"""The vote of an answer its own passages do not contain, under the ``evidence`` join."""


def supported(trajectory: Trajectory) -> bool | None:
    """Whether the trajectory's answer occurs in the passages it read, word for word.

    Both sides are normalised as answers are scored (:func:`~langgraph_parallel.metrics.
    normalize_answer`); the passages are the trajectory's observations (its user messages after
    the first, which is the prompt or the question). ``None`` when there is nothing to look for:
    no answer, or ``yes``/``no``.
    """
    answer = normalize_answer(trajectory["answer"] or "")
    if answer in {"", "yes", "no"}:
        return None
    # Tags apart from the words they touch, or normalising would glue "Lyon.</information>".
    read = " ".join(
        normalize_answer(m["content"].replace("<", " <").replace(">", "> "))
        for m in trajectory["messages"][1:]
        if m["role"] == "user"
    )
    return f" {answer} " in f" {read} "


def vote(
    trajectories: Sequence[Trajectory], *, weighted: bool, evidence: bool = False
) -> tuple[Trajectory | None, dict[str, float]]:
    """Vote over normalised answers (module docstring has the rules).

    Args:
        trajectories: The trajectories; those without an answer do not vote.
        weighted: Weight each vote by the answer's confidence (the ``weighted`` join).
        evidence: Halve the vote of an answer its own passages lack (the ``evidence`` join).

    Returns:
        The first trajectory with the winning answer (``None`` if nobody answered) and the total
        weight per normalised answer.
    """
    votes: dict[str, float] = {}
    first: dict[str, Trajectory] = {}
    for trajectory in sorted(trajectories, key=lambda t: t["index"]):
        if not trajectory["answer"]:
            continue
        key = normalize_answer(trajectory["answer"])
        weight = 1.0
        if weighted and trajectory["steps"]:
            confidence = answer_confidence(trajectory["steps"][-1])
            weight = 1.0 if confidence is None else confidence
        if evidence and supported(trajectory) is False:
            weight *= _UNSUPPORTED_WEIGHT
        votes[key] = votes.get(key, 0.0) + weight
        first.setdefault(key, trajectory)
    if not votes:
        return None, votes
    # max() keeps the first of equal keys and `first` is in trajectory order: ties go to the
    # answer reached first.
    return first[max(votes, key=lambda k: votes[k])], votes


class AggregateNode(DualNode):
    """Pick the final answer from the trajectories and their reports.

    A failed analyst call falls back to ``majority`` (transient errors first get the attempts
    of ``retry``).

    Args:
        model: The analyst model of the ``select`` join; ``None``: ``select`` falls back to
            ``majority`` (recorded in ``aggregation["fallback"]``).
        defaults: Settings used when the run passes no :class:`MuseContext`.
        retry: The retry policy the node is added with.

    Attributes:
        judge: ``model`` is not the rollouts' own: it reads in its declared style and samples
            as built (:mod:`.report`); set by :func:`~.graph.create_parallel_muse_graph`.
    """

    judge: bool = False

    def __init__(
        self, model: BaseChatModel | None, defaults: MuseContext, retry: RetryPolicy | None = None
    ) -> None:
        self.model = model
        self.defaults = defaults
        self.retry = retry

    def body(self, state: Mapping[str, Any], runtime: Runtime[Any]) -> Body[dict[str, Any]]:
        """Return ``answer``, ``stop_reason``, ``aggregation`` and ``aggregate_*`` counters."""
        ctx = muse_context(runtime, self.defaults)
        trajectories: list[Trajectory] = sorted(state.get("trajectories") or [], key=_index)
        answered = [t for t in trajectories if t["answer"]]
        chosen, votes = vote(
            answered, weighted=ctx.join == "weighted", evidence=ctx.join == "evidence"
        )
        record: dict[str, Any] = {
            "join": ctx.join,
            "method": ctx.join,
            "votes": votes,
            "excluded": [t["id"] for t in trajectories if not t["answer"]],
            "fallback": None,
        }
        counters: dict[str, int] = {}
        model = self.model
        if ctx.join == "select" and len(votes) > 1 and model is None:
            record["method"], record["fallback"] = "majority", "no analyst model"
        elif ctx.join == "select" and len(votes) > 1 and model is not None:
            reports = {r["trajectory"]: r["text"] for r in state.get("reports") or []}
            numbered = "\n\n".join(
                f"Report {k}:\n{reports.get(t['id'], '(no report)')}"
                for k, t in enumerate(answered, start=1)
            )
            prompt = ctx.analyst_prompt.format(
                question=state["question"], n=len(answered), reports=numbered
            )
            raw = (yield Blocking(reduction_style, (model, ctx, self.judge))) == "raw"
            choices = "|".join(str(k) for k in range(1, len(answered) + 1))
            try:
                text, counters = yield from greedy_call(
                    model,
                    [HumanMessage(prompt + (ANALYST_RAW_PRIMER if raw else ""))],
                    ctx,
                    "aggregate",
                    regex=f"<choice>({choices})</choice>" if raw else None,
                    judge=self.judge,
                )
            except Exception as exc:  # fall back like unparsable output, and say why
                text = f"analyst call failed: {reported_error(exc, runtime, self.retry)}"
            record["analyst"] = text
            match = _CHOICE.search(text)
            if match and 1 <= int(match.group(1)) <= len(answered):
                chosen, record["method"] = answered[int(match.group(1)) - 1], "analyst"
            else:
                record["method"] = "majority"
                record["fallback"] = "analyst output has no valid <choice>k</choice>"
        elif ctx.join == "select":
            record["method"] = "unanimous" if votes else "none"
        record["chosen"] = chosen["id"] if chosen else None
        answer = chosen["answer"] if chosen else None
        reason = "answered"
        # The router stopped early, or the run's recursion limit (which bounds each rollout
        # subgraph too) cut a trajectory short: say so even with an answer.
        cut = [t["stop_reason"] for t in trajectories if t["stop_reason"].startswith("recursion")]
        limit = state.get("limit") or (cut[0] if cut else None)
        if limit:
            record["limit"] = limit
        if chosen is None:
            reason = limit or f"no_answer: none of the {len(trajectories)} trajectories answered"
        return {
            "answer": answer,
            "stop_reason": reason,
            "aggregation": record,
            "counters": counters,
        }


def _index(trajectory: Mapping[str, Any]) -> int:
    return int(trajectory["index"])
