"""GRPO training of ParallelSearch behaviour on rollouts of our graph (needs the train extra).

Names load lazily, so ``langgraph-parallel --help`` does not import TRL and transformers.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from langgraph_parallel.errors import UserError, install_hint

if TYPE_CHECKING:
    from langgraph_parallel.train.grpo import TrainConfig, train

__all__ = ["TrainConfig", "train", "train_extra"]


@contextmanager
def train_extra() -> Iterator[None]:
    """Import the train extra's packages inside: a missing one is a ``UserError`` naming it.

    Each training entry point imports them first, before any work that would be wasted.

    Raises:
        UserError: An import of the block failed; the message says how to install the extra.
    """
    try:
        yield
    except ImportError as exc:
        raise UserError(f"training needs the train extra: {install_hint('train')} ({exc})") from exc


def __getattr__(name: str) -> Any:
    if name in __all__:
        from langgraph_parallel.train import grpo

        return getattr(grpo, name)
    raise AttributeError(name)
