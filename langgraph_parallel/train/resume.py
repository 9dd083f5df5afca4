"""Checkpoints of ``train sft`` and resuming from them (``--save-steps``, ``--resume``).

The trainer saves a checkpoint (adapter, optimizer, scheduler, RNG states, trainer state) every
``save_steps`` optimizer steps, and at the last one, under ``<policy>/trainer/``, keeping the
newest :data:`SAVE_TOTAL_LIMIT`. ``--resume`` hands the newest complete one to
``Trainer.train(resume_from_checkpoint=...)``, which restores those states and skips the batches
already consumed, so the resumed run takes the batches an uninterrupted one takes, in the same
order, from the same weights. Each checkpoint's ``trainer_state.json`` also holds a
:class:`RunRecord` (the trainer saves every callback that is an ``ExportableState``): the sha256 of
the trajectory file, the settings that shape the optimisation, and the wall time up to that
checkpoint. A checkpoint of other data or other settings is refused, and the card's ``train_s``
sums the pieces; the work after a piece's last checkpoint is redone by the next piece and only
counted there. Once the adapter and its card are written the checkpoints are removed: the card,
written last, marks a finished policy, which ``--resume`` skips.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from transformers import TrainerCallback, TrainerState
from transformers.trainer import TRAINER_STATE_NAME
from transformers.trainer_callback import ExportableState
from transformers.trainer_utils import sort_checkpoints

from langgraph_parallel.errors import UserError
from langgraph_parallel.models.adapters import read_card
from langgraph_parallel.paths import portable_path, source_commit
from langgraph_parallel.train.trajectories import DATA_FILE, read_trajectories

if TYPE_CHECKING:
    from langgraph_parallel.train.config import SFTRunConfig

SAVE_TOTAL_LIMIT = 2
"""Checkpoints kept: two, so a run killed while writing one still has the one before."""
RESUME_KEYS = (
    "model",
    "init",
    "epochs",
    "learning_rate",
    "warmup_steps",
    "batch_size",
    "micro_batch",
    "lora_rank",
    "lora_layers",
    "loss_steps",
    "seed",
)
"""Settings a resumed run must share with the run it continues (they shape every step)."""


@dataclass(frozen=True)
class Start:
    """Where one policy's training starts.

    Attributes:
        checkpoint: The checkpoint to continue from; ``None``: from scratch.
        train_s: Wall seconds of the earlier pieces, up to that checkpoint.
        resumed: How many times the run has been resumed, this time included.
    """

    checkpoint: Path | None = None
    train_s: float = 0.0
    resumed: int = 0


class RunRecord(TrainerCallback, ExportableState):
    """What every checkpoint records about its run: data, settings, wall time so far, commit.

    Args:
        sha256: SHA-256 of the trajectory file.
        settings: :func:`run_settings` of the run.
        train_s: Wall seconds of the earlier pieces.
        resumed: How many times the run has been resumed.
    """

    def __init__(
        self, sha256: str, settings: dict[str, Any], train_s: float = 0.0, resumed: int = 0
    ) -> None:
        # The code that trains, read now: the checkout may move on during a long run. Read
        # before the clock starts: the git call is no training time.
        self.commit = source_commit()
        self.sha256, self.settings = sha256, settings
        self.train_s, self.resumed = train_s, resumed
        self.began = time.monotonic()

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        """Start this piece's clock."""
        self.began = time.monotonic()

    def elapsed(self) -> float:
        """Wall seconds of the earlier pieces plus this one so far."""
        return self.train_s + time.monotonic() - self.began

    def state(self) -> dict[str, Any]:
        """Return the record as the trainer writes it into ``trainer_state.json``."""
        args = {"sha256": self.sha256, "settings": self.settings, "train_s": self.elapsed()}
        return {"args": {**args, "resumed": self.resumed}, "attributes": {}}


def run_settings(config: SFTRunConfig) -> dict[str, Any]:
    """Return the settings a checkpoint must agree with, and the number of processes.

    The processes count because each takes its share of a batch: another count skips other
    batches on resume.
    """
    settings = {key: getattr(config, key) for key in RESUME_KEYS}
    return {**settings, "processes": int(os.environ.get("WORLD_SIZE", "1"))}


def last_checkpoint(trainer_dir: Path) -> Path | None:
    """Return the newest complete checkpoint in ``trainer_dir``, if any.

    The trainer writes ``trainer_state.json`` last, so a folder without it was cut off while
    being saved (``transformers.trainer_utils.get_last_checkpoint`` would pick it).
    """
    complete = [
        Path(path)
        for path in sort_checkpoints(str(trainer_dir))
        if (Path(path) / TRAINER_STATE_NAME).is_file()
    ]
    return complete[-1] if complete else None


def check_fresh(folders: dict[str, Path]) -> None:
    """Refuse to start over in policy folders where an unfinished run left checkpoints.

    Raises:
        UserError: Naming ``--resume``, or the folder to delete.
    """
    for folder in folders.values():
        if (checkpoint := last_checkpoint(folder / "trainer")) is not None:
            raise UserError(
                f"{checkpoint} is a checkpoint of an unfinished run: add --resume to continue "
                f"it, or delete {folder / 'trainer'} to start again."
            )


def plan_start(folder: Path, *, sha256: str, settings: dict[str, Any]) -> Start | None:
    """How ``--resume`` trains the policy whose adapter goes to ``folder``.

    Args:
        folder: The policy's adapter folder (checkpoints under ``trainer/``).
        sha256: SHA-256 of the trajectory file this command trains on.
        settings: :func:`run_settings` of this command.

    Returns:
        ``None`` when the adapter is finished (its card is written); else the newest
        checkpoint to continue from, or from scratch when there is none.

    Raises:
        UserError: If the adapter or the checkpoint was trained on another file or with other
            settings, naming the fix.
    """
    trainer_dir = folder / "trainer"
    restart = f"delete {trainer_dir} to start again"
    card = read_card(folder)
    if card:
        trained_on = str((card.get("data") or {}).get("sha256"))
        if trained_on != sha256:
            raise UserError(
                f"--resume: {folder} holds an adapter trained on another trajectory file "
                f"(sha256 {trained_on[:12]}, this one {sha256[:12]}): resume with the file "
                "the run started with (--data), or train into a new --out."
            )
        return None
    checkpoint = last_checkpoint(trainer_dir)
    if checkpoint is None:
        return Start()
    return resume_from(
        checkpoint,
        sha256=sha256,
        settings=settings,
        made_by="train sft",
        other_data=f"another trajectory file (sha256 {{theirs}}, this one {{ours}}): resume with "
        f"the file the run started with (--data), or {restart} on this one",
    )


def resume_from(
    checkpoint: Path, *, sha256: str, settings: dict[str, Any], made_by: str, other_data: str
) -> Start:
    """Check that ``checkpoint`` continues this run, and return the start it gives.

    Shared by ``train sft`` and ``train grpo``: the checkpoint's :class:`RunRecord` must name the
    same data (``sha256``) and the same ``settings``.

    Args:
        checkpoint: The checkpoint to continue from.
        sha256: This command's data hash.
        settings: This command's settings that shape a step.
        made_by: The command that writes such checkpoints (quoted when it has no record).
        other_data: The end of the error for other data, with ``{theirs}`` and ``{ours}`` for
            the two hashes' first 12 digits, naming the fix.

    Raises:
        UserError: No record, other data or other settings, naming the fix.
    """
    restart = f"delete {checkpoint.parent} to start again"
    saved = TrainerState.load_from_json(str(checkpoint / TRAINER_STATE_NAME)).stateful_callbacks
    if not isinstance(saved.get(RunRecord.__name__), dict):
        raise UserError(f"{checkpoint} does not record its run (not from {made_by}): {restart}.")
    record = RunRecord.from_state(saved[RunRecord.__name__])
    if record.sha256 != sha256:
        ends = other_data.format(theirs=record.sha256[:12], ours=sha256[:12])
        raise UserError(f"--resume: {checkpoint} was trained on {ends}.")
    changed = {k: v for k, v in settings.items() if record.settings.get(k) != v}
    if changed:
        was = ", ".join(f"{k}={record.settings.get(k)!r}" for k in changed)
        now = ", ".join(f"{k}={v!r}" for k, v in changed.items())
        raise UserError(
            f"--resume: {checkpoint} was trained with {was}, this command asks {now}: repeat "
            f"the settings of the run it continues, or {restart}."
        )
    return Start(checkpoint, record.train_s, record.resumed + 1)


def plan_starts(
    config: SFTRunConfig, folders: dict[str, Path], sha256: str
) -> dict[str, Start | None]:
    """Where every policy starts, settled before any trains.

    A mistake in the last policy is reported before hours of training on the first. Without
    ``--resume`` every policy starts from scratch, where no unfinished run left checkpoints
    (:func:`check_fresh`).
    """
    if not config.resume:
        check_fresh(folders)
        return {policy: Start() for policy in folders}
    settings = run_settings(config)
    return {
        policy: plan_start(folder, sha256=sha256, settings=settings)
        for policy, folder in folders.items()
    }


def own_data(config: SFTRunConfig, keys: tuple[str, ...]) -> Path | None:
    """Return the run's own trajectory file when ``--resume`` without ``--data`` finds one.

    An interrupted run that got as far as writing ``OUT/data.jsonl`` goes on with it:
    synthesising again would cost its time and, with another corpus or code, give another
    file than the one its checkpoints learnt from.

    Args:
        config: This command's settings.
        keys: The synthesis settings (``sft.SYNTHESIS_KEYS``), compared with the file's
            ``data.json`` together with the question files; one it lacks is not compared.

    Raises:
        UserError: If the file was synthesised with other settings than this command asks.
    """
    path = Path(config.out) / DATA_FILE
    if not config.resume or config.data or not path.is_file():
        return None
    _, meta = read_trajectories(path, policies=(), held_out=set())
    made = {**(meta.get("config") or {}), **{k: meta[k] for k in ("datasets",) if k in meta}}
    asked = {k: getattr(config, k) for k in keys}
    asked["datasets"] = [portable_path(f) for f in config.datasets]
    changed = [k for k in asked if k in made and made[k] != asked[k]]
    if changed:
        was = ", ".join(f"{k}={made[k]!r}" for k in changed)
        now = ", ".join(f"{k}={asked[k]!r}" for k in changed)
        raise UserError(
            f"--resume: {path} was synthesised with {was}, this command asks {now}: repeat the "
            "flags of the run it continues, or pass --data to train on another file."
        )
    return path


def clear_checkpoints(folder: Path) -> None:
    """Remove the checkpoints of a policy whose adapter and card are written."""
    for checkpoint in sort_checkpoints(str(folder / "trainer")):
        shutil.rmtree(checkpoint)
