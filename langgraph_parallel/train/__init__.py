"""GRPO training of ParallelSearch behaviour on rollouts of our graph (needs the train extra).

Names load lazily, so ``langgraph-parallel --help`` does not import TRL and transformers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langgraph_parallel.train.grpo import TrainConfig, train

__all__ = ["TrainConfig", "train"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from langgraph_parallel.train import grpo

        return getattr(grpo, name)
    raise AttributeError(name)
