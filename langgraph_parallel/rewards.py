r"""The ParallelSearch reward: outcome, decomposition, search count and format.

The reward is computed on the *response only*: the model's own steps, never the prompt and never
the retrieved ``<information>`` blocks (a document that happens to contain ``<answer>`` must not
score). :func:`score_steps` takes the steps as the agent produced them; :func:`score_response`
takes the response text a trainer sees and drops the observations first.

Components (coefficients live in :class:`RewardConfig`; defaults in brackets):

- **outcome** — exact match of the last answer, format-aware: 1 (correct, valid format),
  ``1 - format_penalty`` (correct, invalid format) [0.9], ``format_penalty`` (wrong, valid)
  [0.1], 0 (wrong, invalid).
- **decomposition** [``lambda_d`` = 0.15, ``alpha`` = 3] — looks at the *first* search of the
  response. A parallelizable question earns ``lambda_d`` when that search has two or more
  sub-queries (``a ## b`` or a ``query_list`` of two or more); a sequential question earns
  ``lambda_d / alpha`` when it has exactly one. Not decomposing is what a small model does anyway,
  so that bonus is ``alpha`` times smaller than the one for the behaviour we want to teach. No
  search, or a question of unknown class, earns 0.
- **search count** [``lambda_s`` = 0.35] — over the number ``n`` of search rounds: for a
  parallelizable question ``lambda_s / n`` (best at one round); for a sequential one
  ``lambda_s`` at two or more rounds and ``lambda_s / 2`` at one. No search earns 0.
- **format** [0.1] — the whole response is well-formed: at least one step, every step a valid
  action (search or answer) with a non-empty ``<think>``, and the last step an answer.

With ``require_answer`` (off by default, as in the paper; on for ``train grpo``) the
decomposition and search-count terms pay only when the response is well-formed, so a policy
cannot farm them by searching and never answering (what our first GRPO run learned).

Both search syntaxes count the same: :func:`~langgraph_parallel.protocol.parse_action` turns
``<search> a ## b </search>`` and a ``search`` tool call with ``query_list`` into the same
:class:`~langgraph_parallel.protocol.Action`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from langgraph_parallel.metrics import Golds, exact_match
from langgraph_parallel.protocol import INVALID_ACTION_OBSERVATION, Action, parse_action

QuestionClass = Literal["parallelizable", "sequential", "unknown"]
COMPONENTS = ("outcome", "decomposition", "search_count", "format")
"""Names of the reward components, in the order they are logged."""

_BOUNDARY = re.compile(
    r"<information>.*?(?:</information>|\Z)|" + re.escape(INVALID_ACTION_OBSERVATION), re.DOTALL
)
# A model step ends at the stop sequence of its action.
_STEP_END = re.compile(r"</search>|</answer>")


@dataclass(frozen=True, kw_only=True)
class RewardConfig:
    """Coefficients of the ParallelSearch reward (see the module docstring).

    Attributes:
        format_penalty: The outcome's format term: subtracted from a correct answer with an
            invalid format, given to a wrong answer with a valid one.
        decomposition: ``lambda_d``, the decomposition bonus of a parallelizable question.
        alpha: How many times smaller the sequential question's "did not decompose" bonus is.
        search_count: ``lambda_s``, the search-count reward at its best round count.
        format: The format reward of a well-formed response.
        require_answer: Pay the decomposition and search-count terms only to a well-formed
            response (one that ends in an answer).
    """

    format_penalty: float = 0.1
    decomposition: float = 0.15
    alpha: float = 3.0
    search_count: float = 0.35
    format: float = 0.1
    require_answer: bool = False

    def __post_init__(self) -> None:
        if self.alpha <= 0:
            raise ValueError(f"alpha must be positive (got {self.alpha}).")


@dataclass(frozen=True)
class Reward:
    """The reward of one response, by component, with the facts it was computed from.

    Attributes:
        outcome: Format-aware exact-match reward.
        decomposition: Decomposition reward.
        search_count: Search-count reward.
        format: Format reward.
        correct: Whether the last answer matched a gold answer.
        valid_format: Whether the response is well-formed.
        decomposed: Whether the first search had two or more sub-queries (``None``: no search).
        searches: Number of search rounds.
    """

    outcome: float
    decomposition: float
    search_count: float
    format: float
    correct: bool
    valid_format: bool
    decomposed: bool | None
    searches: int

    @property
    def total(self) -> float:
        """Sum of the four components."""
        return self.outcome + self.decomposition + self.search_count + self.format


def is_valid_format(actions: Sequence[Action]) -> bool:
    """Return whether the steps form a well-formed response (see the module docstring)."""
    if not actions or actions[-1].kind != "answer":
        return False
    return all(a.kind != "invalid" and a.think for a in actions)


def outcome_reward(correct: bool, valid_format: bool, config: RewardConfig) -> float:
    """Format-aware outcome reward."""
    if correct:
        return 1.0 if valid_format else 1.0 - config.format_penalty
    return config.format_penalty if valid_format else 0.0


def decomposition_reward(
    decomposed: bool | None, question_class: str, config: RewardConfig
) -> float:
    """Decomposition reward of the first search (``decomposed=None``: there was none)."""
    if decomposed is None:
        return 0.0
    if question_class == "parallelizable":
        return config.decomposition if decomposed else 0.0
    if question_class == "sequential":
        return 0.0 if decomposed else config.decomposition / config.alpha
    return 0.0


def search_count_reward(searches: int, question_class: str, config: RewardConfig) -> float:
    """Search-count reward for ``searches`` search rounds."""
    if searches <= 0:
        return 0.0
    if question_class == "parallelizable":
        return config.search_count / searches
    if question_class == "sequential":
        return config.search_count if searches >= 2 else config.search_count / 2
    return 0.0


def first_search_decomposed(actions: Iterable[Action]) -> bool | None:
    """Whether the first search has two or more sub-queries (``None``: there is no search)."""
    searches = [a for a in actions if a.kind == "search"]
    return len(searches[0].queries) >= 2 if searches else None


def score_steps(
    steps: Iterable[str | Action],
    golds: Golds,
    question_class: str,
    config: RewardConfig | None = None,
) -> Reward:
    """Score a response given as its model steps.

    Args:
        steps: Each model step as text (parsed with
            :func:`~langgraph_parallel.protocol.parse_action`) or as a parsed ``Action`` (use
            that for tool-call steps).
        golds: Gold answer(s).
        question_class: ``parallelizable``, ``sequential`` or ``unknown``.
        config: Coefficients; defaults to :class:`RewardConfig()`.

    Returns:
        The reward by component.
    """
    config = config or RewardConfig()
    actions = [s if isinstance(s, Action) else parse_action(s) for s in steps]
    searches = [a for a in actions if a.kind == "search"]
    answers = [a for a in actions if a.kind == "answer"]
    correct = bool(answers) and exact_match(answers[-1].answer, golds) == 1.0
    valid = is_valid_format(actions)
    decomposed = first_search_decomposed(actions)
    pays = valid or not config.require_answer
    return Reward(
        outcome=outcome_reward(correct, valid, config),
        decomposition=decomposition_reward(decomposed, question_class, config) if pays else 0.0,
        search_count=search_count_reward(len(searches), question_class, config) if pays else 0.0,
        format=config.format if valid else 0.0,
        correct=correct,
        valid_format=valid,
        decomposed=decomposed,
        searches=len(searches),
    )


def response_steps(response: str) -> list[str]:
    """Split a response text (steps and observations, prompt excluded) into the model's steps.

    ``<information>`` blocks and the invalid-action note are the environment's words: they are
    dropped and mark step boundaries. Inside a chunk, a step ends after ``</search>`` or
    ``</answer>``.
    """
    steps = []
    for chunk in _BOUNDARY.split(response):
        start = 0
        for match in _STEP_END.finditer(chunk):
            steps.append(chunk[start : match.end()])
            start = match.end()
        steps.append(chunk[start:])
    return [s for s in steps if s.strip()]


def score_response(
    response: str, golds: Golds, question_class: str, config: RewardConfig | None = None
) -> Reward:
    """Score a response text: :func:`response_steps`, then :func:`score_steps`."""
    return score_steps(response_steps(response), golds, question_class, config)
