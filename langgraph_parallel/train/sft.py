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
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.paths import portable_path
from langgraph_parallel.train import train_extra
from langgraph_parallel.train.config import SFTRunConfig
from langgraph_parallel.train.gold import POLICIES, GoldQuestion
from langgraph_parallel.train.questions import excluded_ids, pick_questions
from langgraph_parallel.train.trajectories import read_trajectories, write_trajectories

SYNTHETIC_METHOD = "LoRA SFT on synthetic trajectories of the real graph (scripted gold teacher)"
"""The card's ``method`` of a synthesised run (a run on samples names its own, in ``data.json``)."""
SYNTHESIS_KEYS = ("per_class", "corpus", "max_turns", "top_k", "passage_sentences", "seed")
"""Settings that shape the trajectories (recorded in ``data.json``, copied into the cards)."""


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
    from langgraph_parallel.eval.contexts import context_corpus

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

    with train_extra():  # before a synthesis that would be wasted
        from langgraph_parallel.train.resume import check_fresh, own_data, plan_starts

    if config.init:
        check_init(config)
    folders: dict[str, Path] = {p: Path(config.out) / p for p in config.policies}
    if not config.resume:  # before a synthesis rewrites the file their checkpoints learnt from
        check_fresh(folders)
    held_out = excluded_ids(config.exclude)
    if config.from_samples:  # the same folders give the same file: --resume needs no own_data
        from langgraph_parallel.train.from_samples import write_sample_data
        from langgraph_parallel.train.sample_pool import evaluation_ids

        data = write_sample_data(
            Path(config.out),
            config.from_samples,
            config.policies[0],
            init=config.init,
            held_out={*held_out, *evaluation_ids()},
            yes_no_min_right=config.yes_no_min_right,
            command=command,
        )
    else:
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
    sampled: dict[str, Any] = {
        k: meta[k] for k in ("sample_folders", "sampled", "selection") if k in meta
    }
    provenance = {
        "data": {
            "files": meta.get("datasets") or [portable_path(data)],
            **({"trajectories_file": portable_path(data)} if config.data else {}),
            "sha256": meta["sha256"],
            **({"synthesis_command": meta.get("command", "")} if config.data else {}),
            **sampled,
        },
        "method": meta.get("method") or SYNTHETIC_METHOD,
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
