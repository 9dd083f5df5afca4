"""Which questions a training run may use: held-out ids out, README entities out, balanced."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from langgraph_parallel.errors import UserError
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.train.gold import GoldQuestion, gold_questions

if TYPE_CHECKING:
    from langgraph_parallel.train.config import SFTRunConfig

__all__ = ["README_ENTITIES", "excluded_ids", "names_readme_entity", "pick_questions"]


README_ENTITIES = ("Scott Derrickson", "Ed Wood")
"""The README question's entities: no training question names them (the README question is an
anecdote a new user checks, so neither it nor a question about its people is ever trained on)."""


def names_readme_entity(*texts: str) -> bool:
    """Whether any of the texts (a question, its gold titles) names a README entity.

    The one rule every trainer and sampler applies, whatever type its questions come in.
    """
    return any(entity in text for text in texts for entity in README_ENTITIES)


def excluded_ids(paths: tuple[str, ...]) -> list[str]:
    """Ids of every question in the held-out files (sorted, for the card)."""
    return sorted(
        {str(row["id"]) for path in paths for row in read_rows(path, what="held-out file")}
    )


def pick_questions(config: SFTRunConfig) -> list[GoldQuestion]:
    """Return gold questions minus held-out ids and README entities, ``per_class`` a class."""
    held_out = set(excluded_ids(config.exclude))
    golds = [
        g
        for path in config.datasets
        for g in gold_questions(path)
        if g.id not in held_out
        and not names_readme_entity(g.question, *(t for level in g.hops for t in level))
    ]
    random.Random(config.seed).shuffle(golds)
    by_class: dict[str, list[GoldQuestion]] = {}
    for gold in golds:
        by_class.setdefault(gold.question_class, []).append(gold)
    picked = [g for rows in by_class.values() for g in rows[: config.per_class]]
    if not picked:
        raise UserError(f"no usable training question in {', '.join(config.datasets)}.")
    return picked
