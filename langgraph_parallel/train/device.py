"""Where a training runs: the device, its precision, and the trainer settings that follow from it.

``train sft`` (:mod:`.lora`) and ``train grpo`` (:mod:`.grpo`) decide these the same way, so
the rule is written once: a GPU trains in bfloat16 where it computes it natively, with gradient
checkpointing; a CPU trains in float32 without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langgraph_parallel.models.cpu import machine
from langgraph_parallel.train.resume import SAVE_TOTAL_LIMIT

__all__ = ["TrainingDevice"]


@dataclass(frozen=True)
class TrainingDevice:
    """The device a training runs on (:meth:`here`), and what it means for the trainer.

    Attributes:
        gpu: A CUDA device trains (else the CPU).
        bf16: It trains in bfloat16 (a GPU that computes it natively), else in float32.
    """

    gpu: bool
    bf16: bool

    @classmethod
    def here(cls) -> TrainingDevice:
        """Return this machine's device: its GPU when torch sees one, else its CPU."""
        import torch

        gpu = torch.cuda.is_available()
        return cls(gpu=gpu, bf16=gpu and torch.cuda.is_bf16_supported())

    @property
    def dtype(self) -> Any:
        """The torch dtype the model is loaded in."""
        import torch

        return torch.bfloat16 if self.bf16 else torch.float32

    def trainer_settings(self, seed: int) -> dict[str, Any]:
        """Return the settings of a TRL trainer config (``SFTConfig``, ``GRPOConfig``) it fixes.

        Every step logged, :data:`~.resume.SAVE_TOTAL_LIMIT` checkpoints kept, no reporting
        service, the run's ``seed``, and the device's precision and checkpointing.
        """
        return {
            "logging_steps": 1,
            "save_total_limit": SAVE_TOTAL_LIMIT,
            "report_to": [],
            "seed": seed,
            "use_cpu": not self.gpu,
            "bf16": self.bf16,
            # Saves memory for a large model on a GPU; on a CPU the recompute only costs time
            # (it tripled an SFT step; TRL turns it on by default). GRPO's rollouts switch it
            # off while they generate either way (policy.generation_mode).
            "gradient_checkpointing": self.gpu,
        }

    def card(self) -> dict[str, Any]:
        """Return what an adapter's card records of it: ``device`` and ``machine``."""
        return {"device": "cuda" if self.gpu else "cpu", "machine": machine()}
