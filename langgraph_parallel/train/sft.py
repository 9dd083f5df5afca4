"""Cold-start SFT: LoRA on synthetic trajectories of our own graph (``train sft``).

``sft(SFTRunConfig(...))`` reads gold plans (:mod:`.gold`) from benchmark files, drops every
question of the held-out evaluation sample, picks the same number of parallelizable and
sequential questions, synthesises a ``parallel`` and a ``sequential`` trajectory for each by
running the real graph on a scripted teacher (:mod:`.synth`), keeps the questions both policies
kept, writes them to a trajectory file (:mod:`.trajectories`) and trains one LoRA adapter per
policy on it (:mod:`.lora`). Both policies see the same questions (also when ``--policies``
trains one of them now and the other later, from the same file), so ParallelSearch-vs-Search-R1
compares equally trained models, as in the paper. ``--synthesize-only`` stops after the file;
``--data FILE`` trains on one without synthesising (synthesis here, training on a GPU machine).
``--resume`` continues an interrupted run from its checkpoints (:mod:`.resume`), on ``--data`` or
else on the run's own ``OUT/data.jsonl`` when it got as far as writing it.

An adapter folder holds float16 weights, ``adapter_config.json`` and the card (base model,
command, data files and counts, excluded ids, settings, log); ``ask --model FOLDER`` merges it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.paths import portable_path, repo_data_dir, shared_data_dir
from langgraph_parallel.train.gold import POLICIES, GoldQuestion, Policy
from langgraph_parallel.train.questions import excluded_ids, pick_questions
from langgraph_parallel.train.trajectories import read_trajectories, write_trajectories

DEFAULT_DATASETS = ("hotpotqa_dev_distractor_subset.jsonl.gz",)
SYNTHESIS_KEYS = ("per_class", "corpus", "max_turns", "top_k", "passage_sentences", "seed")
"""Settings that shape the trajectories (recorded in ``data.json``, copied into the cards)."""


@dataclass(frozen=True, kw_only=True)
class SFTRunConfig:
    """Settings of ``langgraph-parallel train sft``.

    Attributes:
        datasets: Question files with supporting facts and contexts.
        out: Output folder: ``data.jsonl`` (the trajectories) and one adapter folder per policy.
        policies: Which policies to train (``parallel``, ``sequential``).
        model: Base model: an embedded name or a model folder.
        init: A trained adapter to keep training instead of a fresh LoRA on ``model``: an
            embedded policy (``smollm2-parallel``) or an adapter folder. Its base replaces
            ``model``, its rank ``lora_rank``; one policy, the adapter's own (a curriculum:
            chains after the HotpotQA cold start, on a CPU where retraining from zero is slow).
        per_class: Questions per class (parallelizable, sequential); ``None``: all.
        exclude: Question files whose ids are never trained on (the evaluation sample).
        corpus: Corpus to search; ``None``: the bundled index for HotpotQA, else the rows' own.
        data: A trajectory file of an earlier synthesis (``train sft --synthesize-only``) to
            train on instead of synthesising; ``datasets``, ``per_class``, ``corpus``,
            ``max_turns``, ``top_k`` and ``passage_sentences`` are then the file's (its
            ``data.json``), not these.
        epochs: Passes over the data.
        learning_rate: Peak AdamW learning rate (cosine decay after the warm-up).
        warmup_steps: Optimizer steps of linear warm-up from 0 (the first one learns nothing).
        batch_size: Sequences per optimizer step.
        micro_batch: Sequences per forward pass (2 was ~1.8x faster per sequence than 8 on a
            2-core CPU; a GPU takes the whole batch).
        lora_rank: LoRA rank (alpha = 2 x rank), on every linear layer.
        lora_layers: Adapt only the last N decoder layers (``None``: all): the backward pass
            stops at the lowest adapted layer (``benchmarks/sft/levers/``).
        max_turns: Model steps of the graph (a plan needing more is skipped).
        top_k: Documents per sub-query, as at inference.
        passage_sentences: Observation budget of the synthesis: each passage shown as its title
            and first N sentences (``None``: whole passages). Recorded in ``data.json`` and in
            the adapters' cards, so the trained policy is shown the same at inference.
        seed: Question sampling and trainer seed.
        save_steps: Optimizer steps between checkpoints (0: none); 10 of the CPU recipe take
            about 11 minutes, the most an interruption loses.
        resume: Continue an interrupted run in ``out`` (:mod:`.resume`).
    """

    datasets: tuple[str, ...] = field(
        default_factory=lambda: tuple(str(shared_data_dir() / d) for d in DEFAULT_DATASETS)
    )
    out: str
    policies: tuple[Policy, ...] = POLICIES
    model: str = "smollm2"
    init: str | None = None
    per_class: int | None = 150
    exclude: tuple[str, ...] = field(
        default_factory=lambda: (str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz"),)
    )
    corpus: str | None = None
    data: str | None = None
    epochs: float = 1.0
    learning_rate: float = 5e-4
    warmup_steps: int = 3
    batch_size: int = 8
    micro_batch: int = 2
    lora_rank: int = 16
    lora_layers: int | None = None
    max_turns: int = 4
    top_k: int = 3
    passage_sentences: int | None = None
    seed: int = 0
    save_steps: int = 10
    resume: bool = False

    def __post_init__(self) -> None:
        unknown = set(self.policies) - set(POLICIES)
        if unknown or not self.policies:
            raise UserError(f"--policies takes {', '.join(POLICIES)} (got {sorted(unknown)}).")
        if self.batch_size % self.micro_batch:
            raise UserError("--batch-size must be a multiple of --micro-batch.")
        if self.lora_layers is not None and self.lora_layers < 1:
            raise UserError("--lora-layers takes a number of top layers >= 1 (omit it for all).")
        if self.save_steps < 0:
            raise UserError("--save-steps takes a number of optimizer steps, or 0 for none.")
        if self.passage_sentences is not None and self.passage_sentences < 1:
            raise UserError("--passage-sentences must be at least 1 (omit it for whole passages).")


def synthesize_all(config: SFTRunConfig, golds: list[GoldQuestion]) -> list[dict[str, Any]]:
    """Trajectories of both policies for the questions that *both* kept."""
    from langgraph_parallel.train.synth import MemoSearcher, synthesize

    search = MemoSearcher(searcher_for(config, golds))
    kept = {
        policy: synthesize(
            golds,
            policy,
            search,
            max_turns=config.max_turns,
            top_k=config.top_k,
            passage_sentences=config.passage_sentences,
        )
        for policy in POLICIES
    }
    common = set.intersection(*({r["id"] for r in records} for records in kept.values()))
    return [r for policy in POLICIES for r in kept[policy] if r["id"] in common]


def searcher_for(config: SFTRunConfig, golds: list[GoldQuestion]) -> Any:
    """Open the bundled index for HotpotQA; else an index of the questions' own paragraphs."""
    from langgraph_parallel.retrieval.indexes import corpus_index

    if config.corpus or all(g.dataset == "hotpotqa" for g in golds):
        return corpus_index(config.corpus)
    from langgraph_parallel.train.contexts import context_corpus

    return corpus_index(str(context_corpus(g.context for g in golds)))


def check_init(config: SFTRunConfig) -> None:
    """Refuse an ``init`` that is not a trained adapter of the one policy being trained.

    Raises:
        UserError: Naming the fix.
    """
    from langgraph_parallel.models.adapters import read_card
    from langgraph_parallel.train.start import start_adapter

    adapter = start_adapter(str(config.init))
    if adapter is None:
        raise UserError(
            f"--init {config.init} is not a trained adapter (an embedded policy such as "
            "smollm2-parallel, or a folder from train sft); to train a fresh LoRA on a plain "
            "model use --model."
        )
    policy = read_card(adapter).get("policy")
    if tuple(config.policies) != (policy,):
        raise UserError(
            f"--init {config.init} is the {policy!r} policy: train only it (--policies {policy})."
        )


def synthesize_run(config: SFTRunConfig, *, command: str = "") -> Path:
    """Pick and synthesise, then write ``OUT/data.jsonl`` and ``OUT/data.json``; returns the file.

    The file holds both policies' trajectories of the questions both kept, whatever
    ``policies`` says, so either can be trained from it later on the same questions.
    """
    started = time.time()
    records = synthesize_all(config, pick_questions(config))
    if not records:
        raise UserError("no trajectory survived synthesis (see train/synth.py for the filters).")
    meta = {
        "command": command,
        "datasets": [portable_path(f) for f in config.datasets],
        "exclude": [portable_path(f) for f in config.exclude],
        "config": {k: getattr(config, k) for k in SYNTHESIS_KEYS},
        "synthesis_s": round(time.time() - started, 1),
    }
    return write_trajectories(Path(config.out), records, meta)


def sft(config: SFTRunConfig, *, command: str = "") -> dict[str, Path]:
    """Synthesise (or read ``config.data``), then train one adapter per policy.

    With ``resume`` and no ``data`` it trains on the run's own file when there is one
    (:func:`~.resume.own_data`), and settles every policy's start before training any.

    Returns:
        Policy -> adapter folder.
    """
    from langgraph_parallel.train.lora import train_policy

    try:  # before a synthesis that would be wasted
        from langgraph_parallel.train.resume import check_fresh, own_data, plan_starts
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise UserError(f"training needs: pip install 'langgraph-parallel[train]' ({exc})") from exc

    if config.init:
        check_init(config)
    folders: dict[str, Path] = {p: Path(config.out) / p for p in config.policies}
    if not config.resume:  # before a synthesis rewrites the file their checkpoints learnt from
        check_fresh(folders)
    held_out = excluded_ids(config.exclude)
    data = own_data(config, SYNTHESIS_KEYS) or (
        Path(config.data) if config.data else synthesize_run(config, command=command)
    )
    records, meta = read_trajectories(data, policies=config.policies, held_out=set(held_out))
    # The synthesis settings are the file's, not this command's defaults; unknown (None) for a
    # file that came without its data.json.
    synthesis = {k: v for k, v in (meta.get("config") or {}).items() if k in SYNTHESIS_KEYS}
    if config.data and not synthesis:
        synthesis = {k: None for k in SYNTHESIS_KEYS if k != "seed"}
    # Files from before the budget showed whole passages; the card must not claim this command's.
    synthesis.setdefault("passage_sentences", None)
    provenance = {
        "data": {
            "files": meta.get("datasets") or [portable_path(data)],
            **({"trajectories_file": portable_path(data)} if config.data else {}),
            "sha256": meta["sha256"],
            **({"synthesis_command": meta.get("command", "")} if config.data else {}),
        },
        "excluded": {"files": [portable_path(f) for f in config.exclude], "ids": held_out},
        "synthesis": synthesis,
        "synthesis_s": float(meta.get("synthesis_s") or 0.0),
    }
    starts = plan_starts(config, folders, meta["sha256"])
    for policy in config.policies:
        if (start := starts[policy]) is None:  # finished by an earlier piece of this run
            continue
        folders[policy] = train_policy(
            config,
            policy,
            [r for r in records if r["policy"] == policy],
            folders[policy],
            command=command,
            provenance=provenance,
            start=start,
        )
    return folders
