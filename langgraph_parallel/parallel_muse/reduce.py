"""ParallelMuse reduction: ``report`` compresses each trajectory, ``aggregate`` picks the answer.

A report call is greedy, so trajectories with the same report prompt (:func:`report_steps`:
the same steps and observations, hence the same answer) share one call: the router sends one
:class:`ReportTask` per distinct prompt, listing the others in ``copies``, and ``report`` writes
a copy for each (``reused_from`` names the source; a failed call's stub is shared too). The
``reports`` setting of :class:`MuseContext` picks which trajectories are reported at all, and
``report_style="extract"`` writes each report from the trajectory itself (:mod:`.extract`).

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

from langgraph_parallel.agent.context import run_context
from langgraph_parallel.agent.nodes import Blocking, Body, DualNode, Invoke
from langgraph_parallel.agent.step import prompt_style
from langgraph_parallel.errors import (
    clean_text,
    reported_error,
)
from langgraph_parallel.metrics import normalize_answer
from langgraph_parallel.models.usage import usage_counters
from langgraph_parallel.parallel_muse.context import MuseContext
from langgraph_parallel.parallel_muse.extract import extract_report
from langgraph_parallel.parallel_muse.state import Report, ReportTask, Trajectory
from langgraph_parallel.parallel_muse.uncertainty import answer_confidence
from langgraph_parallel.prompts import ANALYST_RAW_PRIMER, REPORT_RAW_PRIMER

__all__ = ["AggregateNode", "ReportNode", "report_steps", "vote"]

_CHOICE = re.compile(r"<choice>\s*(\d+)\s*</choice>")


def _ask(
    model: BaseChatModel, prompt: str, ctx: MuseContext, prefix: str, regex: str | None = None
) -> Body[tuple[str, dict[str, int]]]:
    """One greedy call; returns the text and its counters named ``{prefix}_*``."""
    options: dict[str, Any] = {"max_tokens": ctx.report_max_tokens, "temperature": 0.0}
    if regex and hasattr(model, "regex"):
        options["regex"] = regex
    reply = yield Invoke(model, [HumanMessage(prompt)], options)
    usage = {f"{prefix}_{key}": value for key, value in usage_counters(reply).items()}
    return clean_text(str(reply.text)), {f"{prefix}_calls": 1, **usage}


def report_steps(trajectory: Trajectory) -> str:
    """Return the part of ``trajectory`` its report prompt shows: every message after the first.

    The first message is the prompt (rules, demos, question); the question is given apart.
    """
    return "".join(m["content"] for m in trajectory["messages"][1:]).strip()


class ReportNode(DualNode):
    """Compress one finished trajectory into a Markdown report (one model call).

    The task's ``copies`` get the same report with ``reused_from`` set, counted in
    ``reports_reused``. A failed call yields a stub report carrying the trajectory's answer and
    the error (transient errors first get the attempts of ``retry``).

    Args:
        model: Any LangChain chat model.
        defaults: Settings used when the run passes no :class:`MuseContext`.
        retry: The retry policy the node is added with.
    """

    def __init__(
        self, model: BaseChatModel, defaults: MuseContext, retry: RetryPolicy | None = None
    ) -> None:
        self.model = model
        self.defaults = defaults
        self.retry = retry

    def body(self, task: ReportTask, runtime: Runtime[Any]) -> Body[dict[str, Any]]:
        """Return ``{"reports": [report, *copies], "counters": report_* counters}``."""
        ctx = run_context(runtime, self.defaults)
        trajectory = task["trajectory"]
        report = Report(trajectory=trajectory["id"], index=trajectory["index"],
                        answer=trajectory["answer"], text="", error=None,
                        reused_from=None)  # fmt: skip
        counters: dict[str, int] = {}
        if ctx.report_style == "extract":  # no model call (parallel_muse/extract.py says why)
            report["text"] = extract_report(trajectory)
        else:
            prompt = ctx.report_prompt.format(
                question=task["question"], trajectory=report_steps(trajectory)
            )
            raw = (yield Blocking(prompt_style, (self.model, ctx))) == "raw"
            try:
                text, counters = yield from _ask(
                    self.model, prompt + (REPORT_RAW_PRIMER if raw else ""), ctx, "report"
                )
            except Exception as exc:  # reported in the stub; the other reports still count
                report["error"] = reported_error(exc, runtime, self.retry)
                answer = trajectory["answer"] or "unknown"
                text = f"(report failed: {report['error']})\n\nAnswer: {answer}"
            report["text"] = (REPORT_RAW_PRIMER.lstrip() if raw else "") + text.strip()
        copies = [
            Report(
                trajectory=copy["trajectory"],
                index=copy["index"],
                answer=copy["answer"],
                text=report["text"],
                error=report["error"],
                reused_from=trajectory["id"],
            )
            for copy in task.get("copies") or []
        ]
        if copies:
            counters = {**counters, "reports_reused": len(copies)}
        return {"reports": [report, *copies], "counters": counters}


def vote(
    trajectories: Sequence[Trajectory], *, weighted: bool
) -> tuple[Trajectory | None, dict[str, float]]:
    """Vote over normalised answers (module docstring has the rules).

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
        model: The analyst model of the ``select`` join.
        defaults: Settings used when the run passes no :class:`MuseContext`.
        retry: The retry policy the node is added with.
    """

    def __init__(
        self, model: BaseChatModel, defaults: MuseContext, retry: RetryPolicy | None = None
    ) -> None:
        self.model = model
        self.defaults = defaults
        self.retry = retry

    def body(self, state: Mapping[str, Any], runtime: Runtime[Any]) -> Body[dict[str, Any]]:
        """Return ``answer``, ``stop_reason``, ``aggregation`` and ``aggregate_*`` counters."""
        ctx = run_context(runtime, self.defaults)
        trajectories: list[Trajectory] = sorted(state.get("trajectories") or [], key=_index)
        answered = [t for t in trajectories if t["answer"]]
        chosen, votes = vote(answered, weighted=ctx.join == "weighted")
        record: dict[str, Any] = {
            "join": ctx.join,
            "method": ctx.join,
            "votes": votes,
            "excluded": [t["id"] for t in trajectories if not t["answer"]],
            "fallback": None,
        }
        counters: dict[str, int] = {}
        if ctx.join == "select" and len(votes) > 1:
            reports = {r["trajectory"]: r["text"] for r in state.get("reports") or []}
            numbered = "\n\n".join(
                f"Report {k}:\n{reports.get(t['id'], '(no report)')}"
                for k, t in enumerate(answered, start=1)
            )
            prompt = ctx.analyst_prompt.format(
                question=state["question"], n=len(answered), reports=numbered
            )
            raw = (yield Blocking(prompt_style, (self.model, ctx))) == "raw"
            choices = "|".join(str(k) for k in range(1, len(answered) + 1))
            try:
                text, counters = yield from _ask(
                    self.model,
                    prompt + (ANALYST_RAW_PRIMER if raw else ""),
                    ctx,
                    "aggregate",
                    regex=f"<choice>({choices})</choice>" if raw else None,
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
