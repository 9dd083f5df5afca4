"""Answer metrics in the SQuAD / HotpotQA style: exact match, token F1 and cover exact match.

Every metric normalises both sides with :func:`normalize_answer` and takes the best score over
the acceptable gold answers, so aliases (2Wiki, MuSiQue, TriviaQA) count as correct. A leaf
module: the benchmarks (:mod:`~langgraph_parallel.eval`), the reward and ParallelMuse's vote
all score answers the same way without importing the benchmark harness.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

__all__ = ["cover_exact_match", "exact_match", "f1_score", "normalize_answer"]

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
# The official HotpotQA script zeroes F1 when one side is one of these and the sides differ, so a
# bare "no" earns no partial credit against a gold such as "no longer".
_SPECIAL = frozenset({"yes", "no", "noanswer"})

Golds = str | Sequence[str]


def normalize_answer(s: str) -> str:
    """Normalise an answer the SQuAD way.

    Lower-cases, removes ASCII punctuation, removes the articles "a", "an" and "the", and squashes
    runs of whitespace to single spaces (stripping both ends).

    Args:
        s: Raw answer text.

    Returns:
        The normalised text; applying the function again leaves it unchanged.

    """
    text = s.lower().translate(_PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _gold_list(golds: Golds) -> list[str]:
    # A bare str is itself a Sequence[str]; without this check it would be scored per character.
    if isinstance(golds, str):
        return [golds]
    return [str(g) for g in golds]


def _best(pred: str | None, golds: Golds, score: Callable[[str, str], float]) -> float:
    if pred is None:
        return 0.0
    norm_pred = normalize_answer(pred)
    return max((score(norm_pred, normalize_answer(g)) for g in _gold_list(golds)), default=0.0)


def _em(pred: str, gold: str) -> float:
    return float(pred == gold)


def _f1(pred: str, gold: str) -> float:
    if (pred in _SPECIAL or gold in _SPECIAL) and pred != gold:
        return 0.0
    pred_tokens, gold_tokens = pred.split(), gold.split()
    # SQuAD v2 rule: two empty answers agree. Without it EM could be 1 while F1 is 0 (e.g. "the"
    # vs "a"), which would make the two metrics contradict each other.
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _cover(pred: str, gold: str) -> float:
    if not gold:
        # An empty gold is a substring of everything; only let it cover an empty prediction.
        return float(not pred)
    # Padding with spaces makes the substring test respect token boundaries ("cat" not in "cats").
    return float(f" {gold} " in f" {pred} ")


def exact_match(pred: str | None, golds: Golds) -> float:
    """Return 1.0 if the normalised prediction equals any normalised gold answer, else 0.0.

    Args:
        pred: The predicted answer; ``None`` (no answer produced) scores 0.0.
        golds: One gold answer or a sequence of acceptable answers.

    Returns:
        1.0 or 0.0.

    """
    return _best(pred, golds, _em)


def f1_score(pred: str | None, golds: Golds) -> float:
    """Return the token-level F1 between prediction and gold, best over the gold answers.

    Follows the HotpotQA script: if either normalised side is "yes", "no" or "noanswer" and the
    two differ, the score is 0.

    Args:
        pred: The predicted answer; ``None`` scores 0.0.
        golds: One gold answer or a sequence of acceptable answers.

    Returns:
        A value in [0, 1].

    """
    return _best(pred, golds, _f1)


def cover_exact_match(pred: str | None, golds: Golds) -> float:
    """Return 1.0 if a normalised gold answer occurs in the normalised prediction as whole tokens.

    Useful for verbose predictions ("It was James Madison.") that contain the right answer.

    Args:
        pred: The predicted answer; ``None`` scores 0.0.
        golds: One gold answer or a sequence of acceptable answers.

    Returns:
        1.0 or 0.0.

    """
    return _best(pred, golds, _cover)
