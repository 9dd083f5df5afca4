"""Step uncertainty of agent trajectories and the choice of ParallelMuse branch points.

A step is one model call. Its token logprobs (OpenAI shape ``{token, logprob, top_logprobs}``)
are mapped onto the character spans of its functional regions (from
:func:`~.regions.region_spans`) by accumulating the lengths of the token
strings: token ``t`` covers ``[sum(len(tokens[:t])), sum(len(tokens[:t+1])))`` and belongs to a
region when that interval overlaps one of the region's spans. Engines return each token's decoded
text, so the offsets are exact except where a multi-byte character is split over tokens (each half
decodes to a replacement character); that shifts later offsets by a character or so, which only
matters for a token right at a region boundary.

Scores (higher = more uncertain), per step and region:

- ``entropy``: ``exp(mean_t H_t)`` with ``H_t = -sum_i p_i log p_i`` over the *renormalised*
  top-k distribution ``p_i = exp(lp_i) / sum_j exp(lp_j)`` of token ``t``. (The reference code
  multiplies renormalised probabilities by un-normalised logprobs; that is not an entropy.)
- ``ppl``: ``exp(-mean_t logprob_t)`` of the sampled tokens; tokens whose logprob is not finite
  (the engine did not report the sampled token) are skipped.

Branch points: any step may be one, the final answer step included. Forking at step ``i`` means
re-generating step ``i`` from the messages before it, so an uncertain answer step is as worth
re-sampling as an uncertain search. Only a trajectory's *own* steps are candidates (a branch
inherits the steps before its fork point; those are scored in the trajectory that generated
them), and a step without tokens in the chosen region is never picked. Nor is a step after one
that repeats an earlier search (:func:`loop_start`): a fork there would inherit the loop (57 of
513 forks did, on 150 held-out HotpotQA questions under the defaults of 2349794).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from typing import Any, Literal, NotRequired

from typing_extensions import TypedDict

Region = Literal["reasoning", "exploration", "all", "mixed"]
Mode = Literal["entropy", "ppl"]
REGIONS: tuple[str, ...] = ("reasoning", "exploration", "all", "mixed")
MODES: tuple[str, ...] = ("entropy", "ppl")


class Step(TypedDict):
    """One assistant step of a trajectory (JSON-serialisable).

    Attributes:
        text: The generated text, ending with its stop sequence.
        logprobs: OpenAI-style token logprobs (empty if the model gives none).
        regions: Character spans ``[[start, end], ...]`` per region (``reasoning``,
            ``exploration``, ``answer``), as :func:`~.regions.region_spans`.
        usage: ``prompt_tokens``, ``cached_prompt_tokens``, ``completion_tokens`` of the call.
        action: ``search``, ``answer``, ``invalid`` or ``error`` (the model call failed).
        message_index: Index of this step's message in the trajectory's ``messages``; the prefix a
            branch from this step starts from is ``messages[:message_index]``.
        origin: Id of the trajectory whose model call produced the step.
        tool_calls: An agent's step (:mod:`.graph`): the message's tool calls, which
            the text (what the engine generated) may not spell out.
        fork: An agent's step: where a fork of it starts, its thread's ``checkpoint_id`` and
            the node (``as_node``) that wrote that checkpoint; ``None`` when no checkpoint
            holds exactly the messages before it (such a step is never a branch point).
    """

    text: str
    logprobs: list[dict[str, Any]]
    regions: dict[str, list[list[int]]]
    usage: dict[str, int]
    action: str
    message_index: int
    origin: str
    tool_calls: NotRequired[list[dict[str, Any]]]
    fork: NotRequired[dict[str, str] | None]


class BranchPoint(TypedDict):
    """A step picked for forking: ``trajectory``, ``step``, ``region``, ``mode`` and ``score``."""

    trajectory: str
    step: int
    region: str
    mode: Mode
    score: float


def token_regions(
    regions: Mapping[str, Sequence[Sequence[int]]], logprobs: Sequence[Mapping[str, Any]]
) -> dict[str, list[int]]:
    """Map character spans onto token indices (see the module docstring).

    Args:
        regions: Character spans per region name.
        logprobs: The step's token logprobs, in generation order.

    Returns:
        Token indices per region name, plus ``"all"`` (every token).
    """
    offsets, position = [], 0
    for item in logprobs:
        width = len(str(item.get("token") or ""))
        offsets.append((position, position + width))
        position += width
    out = {"all": list(range(len(logprobs)))}
    for name, spans in regions.items():
        out[name] = [
            t for t, (a, b) in enumerate(offsets) if any(a < e and s < b for s, e in spans)
        ]
    return out


def token_entropy(top_logprobs: Sequence[Mapping[str, Any]]) -> float | None:
    """Entropy in nats of the renormalised top-k distribution; ``None`` without candidates."""
    values = [float(c["logprob"]) for c in top_logprobs if math.isfinite(float(c["logprob"]))]
    if not values:
        return None
    peak = max(values)
    log_total = peak + math.log(sum(math.exp(v - peak) for v in values))
    return -sum(math.exp(v - log_total) * (v - log_total) for v in values)


def region_score(step: Mapping[str, Any], region: str, mode: Mode) -> float | None:
    """Uncertainty of one step's region (``reasoning``, ``exploration``, ``answer`` or ``all``).

    Returns:
        The score, or ``None`` when the region has no scorable token.
    """
    logprobs = step.get("logprobs") or []
    indices = token_regions(step.get("regions") or {}, logprobs).get(region, [])
    if mode == "entropy":
        found = [token_entropy(logprobs[t].get("top_logprobs") or []) for t in indices]
        entropies = [h for h in found if h is not None]
        return math.exp(sum(entropies) / len(entropies)) if entropies else None
    chosen = [float(logprobs[t]["logprob"]) for t in indices]
    finite = [lp for lp in chosen if math.isfinite(lp)]
    return math.exp(-sum(finite) / len(finite)) if finite else None


def answer_confidence(step: Mapping[str, Any]) -> float | None:
    """``exp(mean logprob)`` of the tokens of the answer text (tags excluded), or ``None``."""
    text = str(step.get("text") or "")
    bodies = []
    # `<answer>` is 8 characters and `</answer>` 9: score the body, not the near-certain tags
    # (nor the spaces around it, which share tokens with the tags).
    for start, end in (step.get("regions") or {}).get("answer", []):
        body = text[start + 8 : end - 9]
        if body.strip():
            lead = start + 8 + len(body) - len(body.lstrip())
            bodies.append([lead, lead + len(body.strip())])
    ppl = region_score({**step, "regions": {"body": bodies}}, "body", "ppl")
    return None if ppl is None else 1.0 / ppl


def loop_start(steps: Sequence[Mapping[str, Any]]) -> int | None:
    """Index of the first step that repeats an earlier step's search, or ``None``.

    Two steps repeat when their exploration (the search or tool-call elements of the text,
    whitespace and case aside, or the message's tool calls when the text has none) is the same.
    A trajectory that repeats a search is looping: a fork after that step inherits the loop,
    while a fork at it re-generates the repeat itself.
    """
    seen: set[str] = set()
    for index, step in enumerate(steps):
        key = _search_key(step)
        if key in seen:
            return index
        if key:
            seen.add(key)
    return None


def _search_key(step: Mapping[str, Any]) -> str:
    text = str(step.get("text") or "")
    found = " ".join(text[s:e] for s, e in (step.get("regions") or {}).get("exploration", []))
    if not found and step.get("tool_calls"):
        calls = step["tool_calls"]
        found = json.dumps([[c.get("name"), c.get("args")] for c in calls], sort_keys=True)
    return " ".join(found.lower().split())


def _ranked(
    trajectories: Sequence[Mapping[str, Any]],
    region: str,
    mode: Mode,
    exclude: Collection[tuple[str, int]],
    min_step: int,
) -> list[BranchPoint]:
    scored: list[tuple[float, int, int, BranchPoint]] = []
    for order, trajectory in enumerate(trajectories):
        steps = trajectory.get("steps") or []
        looping = loop_start(steps)
        for index, step in enumerate(steps):
            key = (str(trajectory["id"]), index)
            if step.get("origin") != trajectory["id"] or key in exclude or index < min_step:
                continue
            if looping is not None and index > looping:  # the fork would inherit the loop
                continue
            if "fork" in step and step["fork"] is None:  # an agent step no fork can start at
                continue
            score = region_score(step, region, mode)
            if score is not None:
                point = BranchPoint(
                    trajectory=key[0], step=index, region=region, mode=mode, score=score
                )
                scored.append((-score, index, order, point))
    scored.sort(key=lambda item: item[:3])
    return [point for *_, point in scored]


def select_branch_points(
    trajectories: Sequence[Mapping[str, Any]],
    region: Region,
    mode: Mode,
    k: int,
    *,
    exclude: Collection[tuple[str, int]] = (),
    min_step: int = 0,
) -> list[BranchPoint]:
    """Pick the ``k`` most uncertain steps, most uncertain first.

    Ties go to the earlier step index, then to the earlier trajectory in ``trajectories``.
    ``mixed`` takes ``k // 2`` points by reasoning score and the rest by exploration score (an odd
    ``k`` gives exploration the extra one), never the same step twice; when one region has too
    few candidates, the other fills the gap.

    Args:
        trajectories: Trajectory dicts with ``id`` and ``steps`` (see :class:`Step`).
        region: ``reasoning``, ``exploration``, ``all`` or ``mixed``.
        mode: ``entropy`` or ``ppl``.
        k: How many points at most.
        exclude: ``(trajectory id, step index)`` pairs already used.
        min_step: The earliest step index a point may have. A fork at step 0 keeps only the
            question's prompt: it is a fresh rollout, which shares nothing more with its parent.

    Returns:
        Up to ``k`` branch points.
    """
    if region not in REGIONS or mode not in MODES:
        raise ValueError(f"region must be one of {REGIONS} and mode one of {MODES}.")
    if region != "mixed":
        return _ranked(trajectories, region, mode, exclude, min_step)[: max(k, 0)]
    quota = {"reasoning": k // 2, "exploration": k - k // 2}
    ranked = {name: _ranked(trajectories, name, mode, exclude, min_step) for name in quota}
    picked: list[BranchPoint] = []
    taken: set[tuple[str, int]] = set()
    for name, other in (("reasoning", "exploration"), ("exploration", "reasoning")):
        # The own region first, then the other one for whatever it could not fill.
        for point in [*ranked[name], *ranked[other]]:
            if quota[name] <= 0:
                break
            if (point["trajectory"], point["step"]) not in taken:
                taken.add((point["trajectory"], point["step"]))
                picked.append(point)
                quota[name] -= 1
    return picked
