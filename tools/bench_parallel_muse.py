"""ParallelMuse partial rollouts vs independent rollouts on HotpotQA, on the embedded engine.

Usage:
    .venv/bin/python tools/bench_parallel_muse.py --limit 50 --budget 8 \
        --out benchmarks/parallel_muse

Per question, both systems get the same budget of trajectories: ``parallel-muse`` (1 initial
rollout, forks at the most uncertain steps, leftover budget to fresh rollouts) and ``rollouts``
(``budget`` independent rollouts); both run with ``join=select`` (reports + analyst). The
``majority`` and ``weighted`` answers are computed from the same trajectories, so the three join
modes are compared on identical rollouts. Agent cost: prompt, cached prompt, uncached prefill
(prompt - cached), generated and exploration-region generated tokens, and wall time (rollouts,
reports and analyst together); report/analyst tokens are listed apart. Writes
``parallel_muse.json`` and ``parallel_muse.md`` into ``--out``.

The engine's prefix cache is emptied before every run (unless ``--warm-cache``), so a system's
cached prompt tokens come from its own calls only, not from the other system's run of the same
question.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from langgraph_parallel.apps.bench_cli import source_commit  # noqa: E402
from langgraph_parallel.apps.cli import quiet_engines  # noqa: E402
from langgraph_parallel.apps.registry import load_model  # noqa: E402
from langgraph_parallel.eval.datasets import load_questions  # noqa: E402
from langgraph_parallel.metrics import exact_match, f1_score  # noqa: E402
from langgraph_parallel.parallel_muse.graph import (  # noqa: E402
    create_parallel_muse_graph,
    create_rollouts_graph,
)
from langgraph_parallel.parallel_muse.reduce import vote  # noqa: E402
from langgraph_parallel.parallel_muse.uncertainty import token_regions  # noqa: E402
from langgraph_parallel.retrieval.indexes import corpus_index  # noqa: E402

DATASET = Path(__file__).resolve().parents[1] / "data" / "hotpotqa_dev_sample300.jsonl.gz"
SYSTEMS = ("parallel-muse", "rollouts")
JOINS = ("select", "majority", "weighted")
COST = ("llm_calls", "prompt_tokens", "cached_prompt_tokens", "uncached_prompt_tokens",
        "completion_tokens", "exploration_tokens", "prefill_plus_generated", "report_tokens",
        "wall_s")  # fmt: skip


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=50, help="questions (seeded sample)")
    parser.add_argument("--budget", type=int, default=8, help="trajectories per question")
    parser.add_argument("--out", default="benchmarks/parallel_muse", help="output folder")
    parser.add_argument("--dataset", default=str(DATASET), help="question file")
    parser.add_argument("--corpus", default=None, help="corpus file (default: bundled index)")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--seed", type=int, default=0, help="question sample seed")
    parser.add_argument("--region", default="exploration")
    parser.add_argument("--mode", default="entropy")
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--top-k", type=int, default=3)
    parser.add_argument("--warm-cache", action="store_true", help="keep the prefix cache")
    parser.add_argument(
        "--resume", action="store_true", help="keep the rows already in --out and run the rest"
    )
    return parser.parse_args()


def measure(graph: Any, question: Any) -> dict[str, Any]:
    """Run one question; return cost counters and EM/F1 per join mode."""
    start = time.perf_counter()
    state = graph.invoke({"question": question.question})
    wall = time.perf_counter() - start
    c = state["counters"]
    trajectories = state["trajectories"]
    answers = {"select": state["answer"]}
    for join in ("majority", "weighted"):
        chosen, _ = vote(trajectories, weighted=join == "weighted")
        answers[join] = chosen["answer"] if chosen else None
    exploration = sum(
        len(token_regions(s["regions"], s["logprobs"])["exploration"])
        for t in trajectories
        for s in t["steps"]
        if s["origin"] == t["id"]
    )
    uncached = c.get("prompt_tokens", 0) - c.get("cached_prompt_tokens", 0)
    row = {
        "llm_calls": c.get("llm_calls", 0),
        "prompt_tokens": c.get("prompt_tokens", 0),
        "cached_prompt_tokens": c.get("cached_prompt_tokens", 0),
        "uncached_prompt_tokens": uncached,
        "completion_tokens": c.get("completion_tokens", 0),
        "exploration_tokens": exploration,
        "prefill_plus_generated": uncached + c.get("completion_tokens", 0),
        "report_tokens": sum(
            c.get(f"{p}_{k}", 0)
            for p in ("report", "aggregate")
            for k in ("prompt_tokens", "completion_tokens")
        ),  # fmt: skip
        "wall_s": wall,
        "trajectories": len(trajectories),
        "branches": sum(t["parent"] is not None for t in trajectories),
        "failed": sum(t["stop_reason"].startswith("model_error") for t in trajectories),
        "answered": sum(t["answer"] is not None for t in trajectories),
        "answers": answers,
        "aggregation": state["aggregation"].get("method"),
    }
    for join, answer in answers.items():
        row[f"em_{join}"] = exact_match(answer, question.answers)
        row[f"f1_{join}"] = f1_score(answer, question.answers)
    return row


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for system in SYSTEMS:
        part = [r for r in rows if r["system"] == system]
        keys = [*COST, "answered", "branches", "failed"]
        keys += [f"{m}_{j}" for j in JOINS for m in ("em", "f1")]
        out[system] = {"n": len(part), **{k: statistics.fmean(r[k] for r in part) for k in keys}}
    muse, base = out["parallel-muse"], out["rollouts"]
    out["relative"] = {k: muse[k] / base[k] - 1 for k in COST if base[k]}
    return out


def markdown(result: dict[str, Any]) -> str:
    summary = result["summary"]
    lines = ["# ParallelMuse partial rollouts vs independent rollouts (HotpotQA)", "",
             f"Command: `{result['command']}`", "", "Means per question.", "",
             "| system | n | " + " | ".join(COST) + " |",
             "|---" * (len(COST) + 2) + "|"]  # fmt: skip
    for system in SYSTEMS:
        s = summary[system]
        lines.append(f"| {system} | {s['n']} | " + " | ".join(f"{s[k]:.1f}" for k in COST) + " |")
    rel = summary["relative"]
    lines += ["", "Partial vs independent: " + ", ".join(f"{k} {v:+.1%}" for k, v in rel.items()),
              "", "| system | answered | branches | failed | "
              + " | ".join(f"EM {j} | F1 {j}" for j in JOINS) + " |",
              "|---" * (4 + 2 * len(JOINS)) + "|"]  # fmt: skip
    for system in SYSTEMS:
        s = summary[system]
        scores = " | ".join(f"{s[f'em_{j}']:.3f} | {s[f'f1_{j}']:.3f}" for j in JOINS)
        counts = f"{s['answered']:.2f} | {s['branches']:.2f} | {s['failed']:.2f}"
        lines.append(f"| {system} | {counts} | {scores} |")
    return "\n".join(lines) + "\n"


def previous_rows(path: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Rows of an earlier run with the same settings, so a stopped benchmark can go on."""
    if not path.exists():
        return []
    earlier = json.loads(path.read_text())
    keys = ("budget", "dataset", "corpus", "model", "seed", "region", "mode", "max_turns", "top_k")
    changed = [k for k in keys if earlier["settings"].get(k) != getattr(args, k)]
    if changed:
        sys.exit(f"error: {path} was made with other settings ({', '.join(changed)}); "
                 "use another --out or drop --resume")  # fmt: skip
    return list(earlier["rows"])


def main() -> None:
    args = parse_args()
    quiet_engines()
    questions = load_questions(args.dataset, limit=args.limit, seed=args.seed)
    model, search = load_model(args.model, check=True), corpus_index(args.corpus)
    common = {"budget": args.budget, "join": "select", "max_turns": args.max_turns,
              "top_k": args.top_k}  # fmt: skip
    graphs = {
        "parallel-muse": create_parallel_muse_graph(
            model, search, region=args.region, mode=args.mode, **common
        ),
        "rollouts": create_rollouts_graph(model, search, **common),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = previous_rows(out / "parallel_muse.json", args) if args.resume else []
    done = {(row["id"], row["system"]) for row in rows}
    # A resumed run is the same measurement as the one it continues; record that command.
    command = " ".join([".venv/bin/python", *(a for a in sys.argv if a != "--resume")])
    for i, question in enumerate(questions, start=1):
        # Alternate which system goes first, so neither always finds the other's cached prefix.
        order = SYSTEMS if i % 2 else SYSTEMS[::-1]
        for system in order:
            if (question.id, system) in done:
                continue
            if not args.warm_cache:
                model.reset_prefix_cache()  # on the engine's worker thread (ChatVLLM)
            row = {"id": question.id, "system": system, **measure(graphs[system], question)}
            rows.append(row)
            tokens, wall = row["prefill_plus_generated"], row["wall_s"]
            print(f"[{i}/{len(questions)}] {system}: em_select={row['em_select']:.0f} "
                  f"tokens={tokens} wall={wall:.1f}s", flush=True)  # fmt: skip
        settings = {k: v for k, v in vars(args).items() if k != "resume"}
        result = {"command": command, "commit": source_commit(), "settings": settings,
                  "summary": summarise(rows), "rows": rows}  # fmt: skip
        (out / "parallel_muse.json").write_text(json.dumps(result, indent=2) + "\n")
        (out / "parallel_muse.md").write_text(markdown(result))
    print(markdown(result))


if __name__ == "__main__":
    main()
