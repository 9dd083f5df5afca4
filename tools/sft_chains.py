"""Chain data for SFT (MuSiQue/2Wiki trajectories), with the benchmarks' questions held out.

A second stage on chains alone, a replay mix, or the chains in the first stage's mix.

Usage:
    .venv/bin/python tools/sft_chains.py heldout --out data/bench_heldout_chains.jsonl.gz
    .venv/bin/langgraph-parallel train sft --synthesize-only \
        --dataset ../shared/data/musique_dev_with_paragraphs200.jsonl.gz \
        --dataset ../shared/data/2wikimultihopqa_dev_sample500.jsonl.gz \
        --exclude data/hotpotqa_dev_sample300.jsonl.gz \
        --exclude data/bench_heldout_chains.jsonl.gz --per-class 0 --max-turns 6 --out runs/chains
    .venv/bin/python tools/sft_chains.py select --data runs/chains/data.jsonl --out runs/chains-sel
    .venv/bin/langgraph-parallel train sft --init smollm2-parallel --policies parallel \
        --data runs/chains-sel/data.jsonl --exclude data/hotpotqa_dev_sample300.jsonl.gz \
        --exclude data/bench_heldout_chains.jsonl.gz --epochs 1 --learning-rate 3e-4 \
        --out runs/sft-chain
    # or a replay mix (fewer chains plus first-stage comparisons), trained the same way:
    .venv/bin/python tools/sft_chains.py mix --data runs/chains/data.jsonl \
        --replay runs/sft-data/data.jsonl --out runs/chains-mix
    # or (on a GPU) the chains in the first stage, both policies from zero:
    .venv/bin/python tools/sft_chains.py select --data runs/chains/data.jsonl \
        --out runs/chains-seq --policy sequential      # beside runs/chains-sel (parallel)
    .venv/bin/python tools/sft_chains.py combine --data runs/sft-data/data.jsonl \
        --data runs/chains-sel/data.jsonl --data runs/chains-seq/data.jsonl --out runs/first-mix
    .venv/bin/python tools/gpu_sft.py prepare --data runs/first-mix/data.jsonl --train-args \
        "--epochs 3 --learning-rate 3e-4 --exclude data/hotpotqa_dev_sample300.jsonl.gz \
         --exclude data/bench_heldout_chains.jsonl.gz"

The only MuSiQue and 2Wiki files with paragraphs in ``../shared/data`` are the samples the
benchmarks draw from (``tools/bench_parallel_muse.py``, ``tools/bench_sft.py``), so ``heldout``
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
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

from langgraph_parallel.eval.datasets import load_questions
from langgraph_parallel.paths import shared_data_dir
from langgraph_parallel.train.trajectories import META_FILE, write_trajectories

MUSIQUE = "musique_dev_with_paragraphs200.jsonl.gz"
WIKI = "2wikimultihopqa_dev_sample500.jsonl.gz"
PICKS = ((MUSIQUE, None, 40), (WIKI, ["compositional", "inference"], 40), (WIKI, None, 100))
"""(file, types, first N of the seed-0 order): what the benchmarks draw, with room to grow."""
FEW = {"compositional": 20, "comparison": 24}
"""2Wiki types of which only a seeded few are kept (the rest of their types: all)."""
MIX = {
    ("musique", "2hop"): 40,
    ("2wiki", "inference"): 30,
    ("2wiki", "compositional"): 20,
    ("2wiki", "comparison"): 24,
    ("hotpotqa", "comparison"): 80,
    ("hotpotqa", "bridge"): 30,
}
"""Seeded caps of the replay mix (``mix``); MuSiQue 3-4 hop chains are all kept."""
FIRST = {
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
    rows = [json.loads(line) for line in data.open()]
    mine = [r for r in rows if r["policy"] == policy]
    rng = random.Random(0)
    chosen = [r for r in mine if r["dataset"] == "musique"]
    chosen += [r for r in mine if r["dataset"] == "2wiki" and r["type"] == "inference"]
    few = {kind: [r for r in mine if r["dataset"] == "2wiki" and r["type"] == kind] for kind in FEW}
    for kind in ("comparison", "compositional"):  # the order of the shipped run's shuffles
        rng.shuffle(few[kind])
    chosen += [r for kind in FEW for r in few[kind][: FEW[kind]]]
    rng.shuffle(chosen)
    return _write(chosen, data, out, f"tools/sft_chains.py select --data {data} --policy {policy}")


def mix(data: Path, replay: Path, out: Path, policy: str) -> int:
    """Write a replay mix of ``policy``: fewer chains plus first-stage comparison trajectories.

    A stage of chains alone made the shipped policy forget to decompose (comparison 88% -> 2%),
    so this mix keeps decompositions at about 40% of its trajectories: ``MIX`` caps (seeded) of
    the chain file and of ``replay`` (a first-stage ``train sft --synthesize-only`` file, e.g.
    HotpotQA: its comparisons, and a few bridge chains so a 2-hop bridge stays one query a turn),
    and every MuSiQue 3-4 hop chain. Both policies get the same questions (the same seeded
    shuffle of the same per-policy order). Returns how many it wrote.
    """
    groups: dict[tuple[str, str], list[dict]] = {}
    for path in (data, replay):
        for r in map(json.loads, path.open()):
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
    command = f"tools/sft_chains.py mix --data {data} --replay {replay} --policy {policy}"
    replayed = json.loads(replay.with_name(META_FILE).read_text())
    return _write(chosen, data, out, command, replayed)


def first(datas: list[Path], out: Path) -> int:
    """Write the CPU first stage: :data:`FIRST`'s questions of ``datas``, both policies each.

    The questions of a (dataset, type) are a seeded draw of their sorted ids, so both policies
    get the same ones. Returns how many trajectories it wrote.
    """
    rows = [r for path in datas for r in map(json.loads, path.open())]
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


def combine(
    datas: list[Path], out: Path, rows: list[dict] | None = None, verb: str = "combine"
) -> int:
    """Write every trajectory of ``datas`` (or ``rows`` of them) as one file; returns how many.

    For a stage that trains both policies from zero (``train sft --data``, on a GPU: the chains
    in the first stage's mix rather than a stage of their own). Each question must come with
    both policies' trajectories, once each, so the two policies still see the same questions.

    Raises:
        SystemExit: Naming the question that breaks that.
    """
    if rows is None:
        rows = [r for path in datas for r in map(json.loads, path.open())]
    seen: dict[str, set[str]] = {}
    for r in rows:
        mine = seen.setdefault(str(r["id"]), set())
        if r["policy"] in mine:
            raise SystemExit(f"question {r['id']} has two {r['policy']} trajectories: drop a file.")
        mine.add(r["policy"])
    policies = set().union(*seen.values())
    lone = sorted(i for i, p in seen.items() if p != policies)
    if lone:
        raise SystemExit(
            f"{len(lone)} question(s) lack a policy's trajectory (e.g. {lone[0]}): give both "
            "policies' files (select --policy parallel and --policy sequential)."
        )
    metas = [json.loads(path.with_name(META_FILE).read_text()) for path in datas]
    configs = [m.get("config") or {} for m in metas]
    budgets = {c.get("passage_sentences") for c in configs}
    if len(budgets) > 1:  # a policy is served one cut: its trajectories must all show that cut
        raise SystemExit(
            "the files were synthesised with different --passage-sentences "
            f"({sorted(budgets, key=str)}): synthesise them again with one."
        )
    # The settings all parts share (the card copies them; the passage budget is served from it);
    # the others (max_turns: 4 for HotpotQA, 6 for chains) are each part's, under "parts".
    shared = {k: v for k, v in configs[0].items() if all(c.get(k, v) == v for c in configs)}
    command = f"tools/sft_chains.py {verb} " + " ".join(f"--data {p}" for p in datas)
    meta = {
        # Each part's own steps, then this one: the card copies command and datasets.
        "command": " && ".join(dict.fromkeys([*(m["command"] for m in metas), command])),
        "datasets": list(dict.fromkeys(d for m in metas for d in m.get("datasets", []))),
        "exclude": list(dict.fromkeys(e for m in metas for e in m.get("exclude", []))),
        "config": shared,
        "parts": [
            {k: m[k] for k in ("command", "config", "trajectories") if k in m} for m in metas
        ],
        "selection": command,
    }
    write_trajectories(out, rows, meta)  # adds the counts: trajectories, by_policy
    return len(rows)


def _write(
    chosen: list[dict], data: Path, out: Path, command: str, replayed: dict | None = None
) -> int:
    """Write ``chosen`` and a ``data.json`` whose command and files make the file again.

    ``train sft --data`` copies ``command`` and ``datasets`` into the adapter's card, so they
    name every step (synthesis, replayed synthesis, this selection) and every question file.
    """
    meta = json.loads(data.with_name(META_FILE).read_text())
    steps = [meta["command"], *([replayed["command"]] if replayed else []), command]
    meta.update(
        command=" && ".join(steps),
        datasets=[*meta.get("datasets", []), *(replayed or {}).get("datasets", [])],
        selection=command,
    )
    if replayed:  # its own synthesis settings (HotpotQA: max_turns 4), beside the chains'
        meta["replay"] = {
            k: replayed[k] for k in ("command", "datasets", "config") if k in replayed
        }
    write_trajectories(out, chosen, meta)  # adds the counts: trajectories, by_policy
    return len(chosen)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    verbs = parser.add_subparsers(dest="verb", required=True)
    held = verbs.add_parser("heldout", help="write the benchmarks' questions to a file")
    held.add_argument("--out", type=Path, required=True)
    sel = verbs.add_parser("select", help="keep the chain trajectories of one policy")
    sel.add_argument("--data", type=Path, required=True, help="train sft --synthesize-only file")
    sel.add_argument("--out", type=Path, required=True, help="folder for data.jsonl/data.json")
    sel.add_argument("--policy", default="parallel")
    mixed = verbs.add_parser("mix", help="fewer chains plus first-stage comparisons (replay)")
    mixed.add_argument("--data", type=Path, required=True, help="the chain synthesis file")
    mixed.add_argument("--replay", type=Path, required=True, help="a first-stage synthesis file")
    mixed.add_argument("--out", type=Path, required=True, help="folder for data.jsonl/data.json")
    mixed.add_argument("--policy", default="parallel")
    both = verbs.add_parser("combine", help="one first-stage file of both policies' trajectories")
    both.add_argument("--data", type=Path, action="append", required=True, help="repeatable")
    both.add_argument("--out", type=Path, required=True, help="folder for data.jsonl/data.json")
    cpu = verbs.add_parser("first", help="the CPU first stage: FIRST's questions, both policies")
    cpu.add_argument("--data", type=Path, action="append", required=True, help="repeatable")
    cpu.add_argument("--out", type=Path, required=True, help="folder for data.jsonl/data.json")
    args = parser.parse_args()
    if args.verb == "first":
        print(f"{first(args.data, args.out)} trajectories -> {args.out}")
    elif args.verb == "heldout":
        print(f"{heldout(args.out)} questions -> {args.out}")
    elif args.verb == "select":
        print(f"{select(args.data, args.out, args.policy)} trajectories -> {args.out}")
    elif args.verb == "combine":
        print(f"{combine(args.data, args.out)} trajectories -> {args.out}")
    else:
        n = mix(args.data, args.replay, args.out, args.policy)
        print(f"{n} trajectories -> {args.out}")


if __name__ == "__main__":
    main()
