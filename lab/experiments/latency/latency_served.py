"""The warm path for people: ``ask --server`` in a new process against one running ``serve``.

``langgraph-parallel bench run latency-served``: ``langgraph-parallel serve`` is started
(default engine), then ``langgraph-parallel ask --server URL --json`` runs in a new process for
each of the first ``--limit`` questions of the bundled HotpotQA sample after the first (the
questions of :mod:`.latency`'s in-process runs), timed from outside (imports, index load, the
question; no engine start). The server is warmed up first, as ``serve`` warms itself up
(``warm_up``); the first ask and a second one of the same question are reported apart. The
result goes under ``served`` in the existing ``latency.json``, with its own commit.
"""

from __future__ import annotations

import json
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from lab.base import Experiment, Run
from lab.experiments.latency.latency import ASK_QUESTION
from lab.paths import checkout_dir
from lab.provenance import at_commit
from langgraph_parallel.paths import source_commit

__all__ = ["EXPERIMENT", "render_latency", "served"]


def served(questions: int, log: Path) -> dict[str, Any]:
    """Cold ``ask --server`` per question against one running ``serve``, timed from outside."""
    from langgraph_parallel.eval.datasets import load_questions
    from langgraph_parallel.metrics import exact_match, f1_score
    from langgraph_parallel.models.server import start_server, stop_server
    from langgraph_parallel.paths import repo_data_dir

    with socket.socket() as sock:  # a free port
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    url = f"http://127.0.0.1:{port}"
    begin = time.perf_counter()
    proc = start_server("smollm2-parallel", port=port, log_path=str(log), warm=True)  # as serve
    start_s = time.perf_counter() - begin

    def ask(question: str) -> tuple[float, dict[str, Any]]:
        command = [sys.executable, "-m", "langgraph_parallel.apps.cli", "ask", "--json"]
        begin = time.perf_counter()
        done = subprocess.run(
            [*command, "--server", url, question],
            check=True,
            capture_output=True,
            text=True,
            cwd=checkout_dir(),
        )
        return time.perf_counter() - begin, json.loads(done.stdout.strip().splitlines()[-1])

    try:
        first_s, _ = ask(ASK_QUESTION)
        again_s, _ = ask(ASK_QUESTION)
        rows = []
        sample = load_questions(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")
        for question in sample[1 : questions + 1]:  # the in-process runs' questions after warm-up
            outside, run = ask(question.question)
            row = {
                "id": question.id,
                "cold_ask_s": round(outside, 2),
                "wall_s": run["wall_s"],
                "em": exact_match(run["answer"], question.answers),
                "f1": round(f1_score(run["answer"], question.answers), 3),
                "llm_calls": run["llm_calls"],
                "completion_tokens": run["completion_tokens"],
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        stop_server(proc)
    asks = [r["cold_ask_s"] for r in rows]
    return {
        "server_start_s": round(start_s, 1),
        "first_ask_s": round(first_s, 2),
        "second_ask_s": round(again_s, 2),
        "summary": {
            "questions": len(rows),
            "median_cold_ask_s": round(statistics.median(asks), 2),
            "p90_cold_ask_s": round(sorted(asks)[int(0.9 * (len(asks) - 1))], 2),
            "median_question_s": round(statistics.median(r["wall_s"] for r in rows), 2),
            "within_5s": sum(a <= 5.0 for a in asks),
            "em": round(statistics.mean(r["em"] for r in rows), 3),
            "f1": round(statistics.mean(r["f1"] for r in rows), 3),
        },
        "rows": rows,
    }


def _run(run: Run) -> None:
    run.uses("smollm2-parallel")
    path = run.out / "latency.json"
    results = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    results["served"] = {
        "commit": source_commit(),
        "command": run.command,
        **served(run.limit or 20, run.out / "serve.log"),
    }
    print("served", results["served"]["summary"], flush=True)
    Experiment.write_tables(run.out, "latency", results)


EXPERIMENT = Experiment(
    name="latency-served",
    about="cold `ask --server` per question against one warm `serve` (the warm path for people)",
    out="benchmarks/latency",
    run=_run,
    limit=20,
)


def render_latency(path: Path | None = None) -> str:
    """Render start, decode rates and warm question time per setting (``latency-results``)."""
    path = path or checkout_dir() / "benchmarks" / "latency" / "latency.json"
    result: dict[str, Any] = json.loads(path.read_text())
    first = next(iter(result["settings"].values()))["summary"]
    lines = [
        f"Made by `{result['command']}`{at_commit(result)}, 2 CPU cores, nothing else running. "
        f"Questions: `parallel-search`, `smollm2-parallel`, hybrid index, the first "
        f"{first['questions']} of the bundled HotpotQA sample one at a time after one warm-up "
        "question. Cold ask: `langgraph-parallel ask --json` in a new process (model already "
        "converted), twice. Decode: 64 greedy tokens of free text, one stream and 4 / 8 at once.",
        "",
        "| engine | start s | cold ask s | 1 stream tok/s | 4 streams tok/s | 8 streams tok/s "
        "| first question s | median warm question s | EM | F1 | outside the engine |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in result["settings"].items():
        s = r["summary"]
        lines.append(
            f"| {name} | {r['start_s']:.1f} | {' / '.join(f'{x:.1f}' for x in r['cold_ask_s'])} "
            f"| {r['single_tok_s']:.1f} | {r['batch4_tok_s']:.1f} | {r['batch8_tok_s']:.1f} "
            f"| {s['first_question_s']:.1f} | **{s['median_wall_s']:.2f}** | {s['em']:.3f} "
            f"| {s['f1']:.3f} | {s['outside_engine_share']:.1%} |"
        )
    lines += _replay_lines(result)
    served = result.get("served")
    if served:
        v = served["summary"]
        lines += [
            "",
            f"With `langgraph-parallel serve` running (made by `{served['command']}` at commit "
            f"`{served['commit'][:7]}`): `ask --server URL --json` in a new process for each of "
            f"the same {v['questions']} questions took a median **{v['median_cold_ask_s']:.2f} s**"
            f" from outside (p90 {v['p90_cold_ask_s']:.2f} s; {v['within_5s']} of "
            f"{v['questions']} within 5 s), of which the question {v['median_question_s']:.2f} s"
            f" (imports and index load the rest); EM {v['em']:.3f}, F1 {v['f1']:.3f}. The server "
            f"started and warmed up in {served['server_start_s']:.1f} s; its first ask (the "
            f"cold-ask question above) took {served['first_ask_s']:.1f} s and a second "
            f"{served['second_ask_s']:.1f} s.",
        ]
    return "\n".join(lines)


def _replay_lines(result: dict[str, Any]) -> list[str]:
    """Render the replayed engine calls of each setting that has them (:mod:`.latency_calls`)."""
    lines = []
    for name, r in result["settings"].items():
        calls = r.get("calls")
        if not calls:
            continue
        lines += [
            "",
            f"The same {calls['questions']} questions' {calls['calls']} engine calls replayed on "
            f"`{name}` (prefix cache emptied before each question's calls; a request's first "
            "token is its prefill, the rest its decode). `as_run`: as the graph sent them; "
            "`top16`: with the top-16 logprob alternatives (ParallelMuse's steps); "
            "`no_grammar`: without the action grammar; `free_text`: no grammar or stops, as "
            "many tokens as `as_run`; `probe_text`: the serving probe's passage prompts "
            "decoding 128 tokens each.",
            "",
            "| requests | s per question | first token s per call | prefill tok/s "
            "| decode tok/s | completion tokens |",
            "|---|---|---|---|---|---|",
        ]
        for variant, v in calls.items():
            if not isinstance(v, dict):
                continue
            per = "–" if variant == "probe_text" else f"{v['per_question_s']:.2f}"
            lines.append(
                f"| {variant} | {per} | {v['ttft_per_call_s']:.3f} | {v['prefill_tok_per_s']:.0f}"
                f" | **{v['decode_tok_per_s']:.0f}** | {v['completion_tokens_per_question']:.0f} |"
            )
    return lines
