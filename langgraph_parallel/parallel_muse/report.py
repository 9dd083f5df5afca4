"""ParallelMuse's ``report`` node: compress one finished trajectory into a Markdown report.

Three ways to write it (``report_style`` of :class:`~.context.MuseContext`):

- ``model`` (the paper's): one greedy call on a new prompt, ``report_prompt``, holding the
  question and the trajectory's steps and observations. The prompt shares no prefix with the
  agent's calls, so its whole length is prefilled again: on SmolLM2 about as many tokens as the
  agent phase itself.
- ``continue``: one greedy call on the trajectory's own messages followed by ``report_followup``,
  an instruction turn asking for the same three sections. For raw-prompt models (the embedded
  engine) the prompt is the trajectory's last step, byte for byte, plus the instruction, so the
  engine's prefix cache already holds all of it but the instruction. Chat models get the stored
  turns (text only; tool calls are not stored) and the instruction as the next user turn.
- ``extract``: no call; the report is built from the trajectory (:mod:`.extract`).
- ``auto`` (the default): ``extract`` for raw-prompt models, ``model`` for chat models. The
  embedded policies are trained on the agent's own format only; asked for a report they repeat
  their ``<think>``/``<answer>`` lines up to the token limit (all 771 ``continue`` reports of a
  51-question benchmark run stopped at 256 tokens; the ``model`` ones we read, on two MuSiQue
  questions, looked the same), so a call buys the analyst nothing.

A report call is greedy, so trajectories with the same steps and answer (:func:`report_steps`)
share one call: the router sends one :class:`~.state.ReportTask` per distinct trajectory, listing
the others in ``copies``, and the node writes a copy for each (``reused_from`` names the source;
a failed call's stub is shared too).

**A judge of your own.** The loop's model is the reduction's by default; ``model=`` of
:func:`~.graph.create_parallel_muse_graph` (or any model over an agent) is a *judge*: it writes
the reports and the analyst's reply in its own prompt style (the run's ``prompt_style`` is the
rollouts'), bounded by ``report_max_tokens`` but at the sampling it was built with. The nodes set
``temperature=0`` only on the loop's own model: the paper's GPT-5 judge (and Claude with
extended thinking) accepts no temperature but 1, and a judge's sampling is the caller's choice.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, convert_to_messages
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from langgraph_parallel.agent.context import run_context
from langgraph_parallel.agent.nodes import Blocking, Body, DualNode, Invoke
from langgraph_parallel.agent.policy import policy_of
from langgraph_parallel.agent.step import prompt_style
from langgraph_parallel.errors import UserError, clean_text, reported_error
from langgraph_parallel.models.usage import usage_counters
from langgraph_parallel.parallel_muse.context import MuseContext
from langgraph_parallel.parallel_muse.extract import extract_report
from langgraph_parallel.parallel_muse.state import Report, ReportTask, Trajectory
from langgraph_parallel.prompts import REPORT_RAW_PRIMER

__all__ = [
    "JUDGE_CANNOT_CONTINUE",
    "ReportNode",
    "greedy_call",
    "reduction_style",
    "report_messages",
    "report_steps",
]


JUDGE_CANNOT_CONTINUE = (
    "report_style='continue' asks the model that ran a trajectory to go on from its own "
    "transcript (rules, demos and all), which a judge of another model did not write: use "
    "report_style='model' (or 'auto') with model=..., or leave model=None."
)
"""The error of a judge run with ``report_style="continue"``."""


def reduction_style(model: BaseChatModel, ctx: MuseContext, judge: bool) -> str:
    """Return the prompt style ``model`` reads reduction prompts in (``chat`` or ``raw``).

    A judge (``judge=True``: not the rollouts' own model) reads in the style it declares; the
    run's ``prompt_style`` is the rollouts' setting and applies to the rollouts' model only.
    """
    return policy_of(model).style if judge else prompt_style(model, ctx)


def greedy_call(
    model: BaseChatModel,
    messages: list[BaseMessage],
    ctx: MuseContext,
    prefix: str,
    regex: str | None = None,
    judge: bool = False,
) -> Body[tuple[str, dict[str, int]]]:
    """One call of at most ``report_max_tokens``; returns the text and ``{prefix}_*`` counters.

    Greedy (``temperature=0``) unless ``judge``: a judge samples as it was built (module
    docstring says why).
    """
    options: dict[str, Any] = {"max_tokens": ctx.report_max_tokens}
    if not judge:
        options["temperature"] = 0.0
    if regex and policy_of(model).constrained_decoding:
        options["regex"] = regex
    reply = yield Invoke(model, messages, options)
    usage = {f"{prefix}_{key}": value for key, value in usage_counters(reply).items()}
    return clean_text(str(reply.text)), {f"{prefix}_calls": 1, **usage}


def report_steps(trajectory: Trajectory) -> str:
    """Return the part of ``trajectory`` its report prompt shows: every message after the first.

    The first message is the prompt (rules, demos, question); the question is given apart.
    """
    return "".join(m["content"] for m in trajectory["messages"][1:]).strip()


def report_messages(
    question: str, trajectory: Trajectory, ctx: MuseContext, raw: bool
) -> list[BaseMessage]:
    """Return the messages of ``trajectory``'s report call in ``ctx.report_style``.

    Args:
        question: The question the trajectory answers.
        trajectory: The finished trajectory.
        ctx: Its settings (``report_style``, ``report_prompt``, ``report_followup``).
        raw: Whether the model reads the messages as one document (``raw`` prompt style); the
            report's first heading is then written into the prompt for it to continue.
    """
    primer = REPORT_RAW_PRIMER if raw else ""
    if ctx.report_style == "continue":
        # Raw models read the concatenated texts: the instruction must start on a line of its
        # own after the answer; a chat turn needs no separator.
        followup = ("\n\n" + ctx.report_followup.strip() + primer) if raw else ctx.report_followup
        stored = convert_to_messages(list(trajectory["messages"]))  # {"role", "content"} dicts
        return [*stored, HumanMessage(followup)]
    prompt = ctx.report_prompt.format(question=question, trajectory=report_steps(trajectory))
    return [HumanMessage(prompt + primer)]


class ReportNode(DualNode):
    """Compress one finished trajectory into a report (module docstring: the three styles).

    The task's ``copies`` get the same report with ``reused_from`` set, counted in
    ``reports_reused``. A failed call yields a stub report carrying the trajectory's answer and
    the error (transient errors first get the attempts of ``retry``).

    Args:
        model: Any LangChain chat model; ``None``: every report is extracted (no call).
        defaults: Settings used when the run passes no :class:`MuseContext`.
        retry: The retry policy the node is added with.
        judge: ``model`` is not the rollouts' own (module docstring: how a judge is called).
    """

    def __init__(
        self,
        model: BaseChatModel | None,
        defaults: MuseContext,
        retry: RetryPolicy | None = None,
        *,
        judge: bool = False,
    ) -> None:
        self.model = model
        self.defaults = defaults
        self.retry = retry
        self.judge = judge

    def body(self, task: ReportTask, runtime: Runtime[Any]) -> Body[dict[str, Any]]:
        """Return ``{"reports": [report, *copies], "counters": report_* counters}``."""
        ctx = run_context(runtime, self.defaults)
        trajectory = task["trajectory"]
        report = Report(
            trajectory=trajectory["id"],
            index=trajectory["index"],
            answer=trajectory["answer"],
            text="",
            error=None,
            reused_from=None,
        )
        counters: dict[str, int] = {}
        model = self.model
        raw = (
            model is not None
            and (yield Blocking(reduction_style, (model, ctx, self.judge))) == "raw"
        )
        style = ("extract" if raw else "model") if ctx.report_style == "auto" else ctx.report_style
        if style == "continue" and self.judge:
            raise UserError(JUDGE_CANNOT_CONTINUE)
        if style == "extract" or model is None:  # no call (parallel_muse/extract.py says why)
            report["text"] = extract_report(trajectory)
        else:
            messages = report_messages(task["question"], trajectory, ctx, raw)
            try:
                text, counters = yield from greedy_call(
                    model, messages, ctx, "report", judge=self.judge
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
