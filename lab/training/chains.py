r"""Chain data for SFT (MuSiQue/2Wiki trajectories), with the benchmarks' questions held out.

``langgraph-parallel train chains heldout|select|mix|combine|first``: a second stage on chains
alone, a replay mix, the chains in the first stage's mix, or the CPU first stage
(``tools/train_policies.sh``).

Usage:
    .venv/bin/langgraph-parallel train chains heldout --out data/bench_heldout_chains.jsonl.gz
    .venv/bin/langgraph-parallel train sft --synthesize-only \
        --dataset ../shared/data/musique_dev_with_paragraphs200.jsonl.gz \
        --dataset ../shared/data/2wikimultihopqa_dev_sample500.jsonl.gz \
        --exclude data/hotpotqa_dev_sample300.jsonl.gz \
        --exclude data/bench_heldout_chains.jsonl.gz --per-class 0 --max-turns 6 --out runs/chains
    .venv/bin/langgraph-parallel train chains select --data runs/chains/data.jsonl \
        --out runs/chains-sel
    .venv/bin/langgraph-parallel train sft --init smollm2-parallel --policies parallel \
        --data runs/chains-sel/data.jsonl --exclude data/hotpotqa_dev_sample300.jsonl.gz \
        --exclude data/bench_heldout_chains.jsonl.gz --epochs 1 --learning-rate 3e-4 \
        --out runs/sft-chain
    # or a replay mix (fewer chains plus first-stage comparisons), trained the same way:
    .venv/bin/langgraph-parallel train chains mix --data runs/chains/data.jsonl \
        --replay runs/sft-data/data.jsonl --out runs/chains-mix
    # or (on a GPU) the chains in the first stage, both policies from zero:
    .venv/bin/langgraph-parallel train chains select --data runs/chains/data.jsonl \
        --out runs/chains-seq --policy sequential      # beside runs/chains-sel (parallel)
    .venv/bin/langgraph-parallel train chains combine --data runs/sft-data/data.jsonl \
        --data runs/chains-sel/data.jsonl --data runs/chains-seq/data.jsonl --out runs/first-mix
    .venv/bin/python tools/gpu_sft.py prepare --data runs/first-mix/data.jsonl --train-args \
        "--epochs 3 --learning-rate 3e-4 --exclude data/hotpotqa_dev_sample300.jsonl.gz \
         --exclude data/bench_heldout_chains.jsonl.gz"

The only MuSiQue and 2Wiki files with paragraphs in ``../shared/data`` are the samples the
benchmarks draw from (the experiments ``parallel-muse`` and ``sft``), so ``heldout``
writes the questions those draw (seeded, with room for larger runs: the first 40 MuSiQue, the
first 40 2Wiki ``compositional``/``inference`` and the first 100 2Wiki of any type) to a file
that ``train sft --exclude`` takes (the committed ``data/bench_heldout_chains.jsonl.gz``, which
a test keeps equal to what ``heldout`` writes). ``select`` keeps one policy's trajectories of a
synthesised file: every MuSiQue chain (2-4 hops) and 2Wiki ``inference`` one, and a seeded few 2Wiki
``compositional`` chains and ``comparison`` decompositions (so the stage does not only ever see
chains); about 290k tokens, one epoch in about 45 min on 2 CPU cores. Its ``data.json`` is the
synthesis record plus the selection. ``combine`` joins such files (both policies of each
question) into one that ``train sft --data`` trains both policies on from zero. Measured on this
CPU (``benchmarks/sft/chain/``, ``benchmarks/sft/mix/``): a stage of chains alone made the
shipped policy forget to decompose; the replay mix kept both behaviours but answered worse.
Writing the files is :mod:`.chains_files`'s; the command line :mod:`.chains_cli`'s.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Any

from lab.training.chains_files import COMMAND, combine, write_selection
from langgraph_parallel.eval.datasets import load_questions
from langgraph_parallel.jsonl import read_rows
from langgraph_parallel.paths import shared_data_dir
from langgraph_parallel.train.trajectories import META_FILE

__all__ = ["FEW", "FIRST", "MIX", "PICKS", "first", "heldout", "mix", "select"]

MUSIQUE = "musique_dev_with_paragraphs200.jsonl.gz"
WIKI = "2wikimultihopqa_dev_sample500.jsonl.gz"
PICKS = ((MUSIQUE, None, 40), (WIKI, ["compositional", "inference"], 40), (WIKI, None, 100))
"""(file, types, first N of the seed-0 order): what the benchmarks draw, with room to grow."""
FEW = {"compositional": 20, "comparison": 24}
"""2Wiki types of which only a seeded few are kept (the rest of their types: all)."""
MIX: dict[tuple[str, str], int] = {
    ("musique", "2hop"): 40,
    ("2wiki", "inference"): 30,
    ("2wiki", "compositional"): 20,
    ("2wiki", "comparison"): 24,
    ("hotpotqa", "comparison"): 80,
    ("hotpotqa", "bridge"): 30,
}
"""Seeded caps of the replay mix (``mix``); MuSiQue 3-4 hop chains are all kept."""
FIRST: dict[tuple[str, str | None], int | None] = {
    ("hotpotqa", "comparison"): 170,
    ("hotpotqa", "bridge"): 85,
    ("2wiki", "comparison"): 20,
    ("2wiki", "bridge_comparison"): 20,
    ("2wiki", "inference"): 10,
    ("2wiki", "compositional"): 10,
}
"""Questions per (dataset, type) of the CPU first stage (``first``; ``None``: all; type ``None``:
the dataset's other types, the first key matching a row wins). Sized so both policies train in
one sitting on 2 cores (``benchmarks/sft/cpu/``): 315 questions, two thirds of them comparisons
(the first candidate, a third comparisons and MuSiQue's long 3-4 hop chains, forgot to decompose
and to answer yes/no), 2 epochs on every layer.
"""


def heldout(out: Path) -> int:
    """Write the benchmarks' questions (id, question, answer) to ``out``; returns how many."""
    picks = {}
    for name, types, limit in PICKS:
        for q in load_questions(shared_data_dir() / name, types=types, limit=limit, seed=0):
            picks[q.id] = {"id": q.id, "question": q.question, "answer": q.answer}
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt") as f:
        f.writelines(json.dumps(row) + "\n" for row in picks.values())
    return len(picks)


def select(data: Path, out: Path, policy: str) -> int:
    """Write the chosen trajectories of ``policy`` and their record to ``out``; return how many."""
    rows = read_rows(data, what="trajectory file")
    mine = [r for r in rows if r["policy"] == policy]
    rng = random.Random(0)
    chosen = [r for r in mine if r["dataset"] == "musique"]
    chosen += [r for r in mine if r["dataset"] == "2wiki" and r["type"] == "inference"]
    few = {kind: [r for r in mine if r["dataset"] == "2wiki" and r["type"] == kind] for kind in FEW}
    for kind in ("comparison", "compositional"):  # the order of the shipped run's shuffles
        rng.shuffle(few[kind])
    chosen += [r for kind in FEW for r in few[kind][: FEW[kind]]]
    rng.shuffle(chosen)
    return write_selection(chosen, data, out, f"{COMMAND} select --data {data} --policy {policy}")


def mix(data: Path, replay: Path, out: Path, policy: str) -> int:
    """Write a replay mix of ``policy``: fewer chains plus first-stage comparison trajectories.

    A stage of chains alone made the shipped policy forget to decompose (comparison 88% -> 2%),
    so this mix keeps decompositions at about 40% of its trajectories: ``MIX`` caps (seeded) of
    the chain file and of ``replay`` (a first-stage ``train sft --synthesize-only`` file, e.g.
    HotpotQA: its comparisons, and a few bridge chains so a 2-hop bridge stays one query a turn),
    and every MuSiQue 3-4 hop chain. Both policies get the same questions (the same seeded
    shuffle of the same per-policy order). Returns how many it wrote.
    """
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for path in (data, replay):
        for r in read_rows(path, what="trajectory file"):
            if r["policy"] == policy:
                groups.setdefault((r["dataset"], r["type"]), []).append(r)
    rng = random.Random(0)
    chosen = []
    for key, rows in sorted(groups.items()):
        if key in MIX:
            rng.shuffle(rows)
            chosen += rows[: MIX[key]]
        elif key[0] == "musique":
            chosen += rows
    rng.shuffle(chosen)
    command = f"{COMMAND} mix --data {data} --replay {replay} --policy {policy}"
    replayed = json.loads(replay.with_name(META_FILE).read_text())
    return write_selection(chosen, data, out, command, replayed)


def first(datas: list[Path], out: Path) -> int:
    """Write the CPU first stage: :data:`FIRST`'s questions of ``datas``, both policies each.

    The questions of a (dataset, type) are a seeded draw of their sorted ids, so both policies
    get the same ones. Returns how many trajectories it wrote.
    """
    rows = [r for path in datas for r in read_rows(path, what="trajectory file")]
    groups: dict[tuple[str, str | None], set[str]] = {}
    for r in rows:
        key = next((k for k in FIRST if k[0] == r["dataset"] and k[1] in (None, r["type"])), None)
        if key is not None:
            groups.setdefault(key, set()).add(str(r["id"]))
    rng = random.Random(0)
    chosen: set[str] = set()
    for key in sorted(groups, key=str):
        ids = sorted(groups[key])
        rng.shuffle(ids)
        chosen.update(ids[: FIRST[key]])
    picked = [r for r in rows if str(r["id"]) in chosen]
    rng.shuffle(picked)
    return combine(datas, out, picked, verb="first")
