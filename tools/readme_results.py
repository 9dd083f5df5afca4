"""Generate the result blocks of the docs and README from the committed benchmark files.

Usage:
    .venv/bin/python tools/readme_results.py          # rewrite the blocks where they are
    .venv/bin/python tools/readme_results.py --check  # exit 1 if a block is stale or missing

Each block sits between ``<!-- NAME:start -->`` and ``<!-- NAME:end -->`` in one of the pages
(README.md or a page under ``docs/``: most in ``docs/results.md``, ``summary-results`` in
README.md) and is rendered only from its benchmark file, so a figure in the docs is always the
file's figure; ``tests/unit/test_readme_results.py`` fails when a block and its file disagree.
Every block must be in exactly one page; a block may move between pages without a change here.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def pages(root: Path = REPO) -> list[Path]:
    """The files that may hold blocks: README.md and every Markdown page under ``docs/``."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def _short(commit: str) -> str:
    """A recorded commit as the pages show it: short hash, and ``-dirty`` when recorded so."""
    return f"`{commit[:7]}{'-dirty' if commit.endswith('-dirty') else ''}`"


def _at(result: dict[str, Any]) -> str:
    """Where the figures come from in the history: the commit the benchmark ran at."""
    commit = result.get("commit")
    if not commit:
        return "; it ran before benchmarks recorded their commit"
    return f" at commit {_short(commit)}"


def _commits(run_json: Path) -> str:
    """The commits a resumable ``bench`` folder's rows were written at (its ``run.json``)."""
    commits = json.loads(run_json.read_text()).get("commits") or []
    if not commits:
        return "commits not recorded"
    short = [_short(c) for c in commits]
    return "commit " + short[0] if len(short) == 1 else "commits " + ", ".join(short)


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def render_sft(path: Path = REPO / "benchmarks" / "sft" / "sft.json") -> str:
    """The trained policies' table (``tools/bench_sft.py``)."""
    result: dict[str, Any] = json.loads(path.read_text())
    lines = [
        f"Made by `{result['command']}` (`benchmarks/sft/`): each graph on its own default "
        "model, `max_turns=4`, `top_k=3`; HotpotQA over the bundled corpus, 2Wiki (never "
        "trained on) over an index of the sampled questions' own paragraphs.",
        "",
        "| dataset | class | graph (model) | n | LLM calls | search turns | first search "
        "decomposed | answered | EM | F1 | prompt+completion tokens | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    models = {
        "parallel-search": "smollm2-parallel",
        "sequential": "smollm2-sequential",
        "direct": "smollm2, closed book",
    }
    for dataset, part in result["datasets"].items():
        for cls in ("parallelizable", "sequential"):
            for graph in ("parallel-search", "sequential", "direct"):
                m = part["by_class"][cls].get(graph)
                if m is None:
                    continue
                decomposed = _pct(m["first_search_decomposed"]) if m["searched"] else "-"
                lines.append(
                    f"| {dataset} | {cls} | {graph} ({models[graph]}) | {m['n']} | "
                    f"{m['llm_calls']:.2f} | {m['turns']:.2f} | {decomposed} | "
                    f"{_pct(m['answered'])} | {m['em']:.3f} | {m['f1']:.3f} | "
                    f"{m['prompt_tokens'] + m['completion_tokens']:.0f} | {m['wall_s']:.1f} |"
                )
    lines.append("")
    for dataset, part in result["datasets"].items():
        ratio = part["parallel_over_sequential"].get("parallelizable")
        if ratio:
            lines.append(
                f"- {dataset}, parallelizable questions: `parallel-search` used "
                f"**{ratio['llm_calls']:.2f}x** the LLM calls and **{ratio['turns']:.2f}x** the "
                "search turns of `sequential`."
            )
    saving = result["prompt_tokens"]
    lines.append(
        f"- The trained policies' rules-only prompt is {saving['rules']:.0f} tokens instead of "
        f"the few-shot {saving['few_shot']:.0f}: {saving['saved']:.0f} fewer prefill tokens "
        "per question."
    )
    return "\n".join(lines)


def _muse_setting(flags: list[str]) -> str:
    """Words for a ParallelMuse run's branching settings: the graph's defaults under ``flags``."""
    given = dict(zip(flags[::2], flags[1::2], strict=True))
    initial = int(given.get("--initial-rollouts", 1))
    steps = int(given.get("--top-k-steps", 2))
    samples = int(given.get("--samples-per-step", 3))
    region = given.get("--region", "exploration")
    rounds = int(given.get("--rounds", 1))
    # No --mode: the graph's default at the time of the run, which runs do not record.
    score = {"ppl": " by perplexity", "entropy": " by entropy"}.get(given.get("--mode", ""), "")
    where = "the most uncertain" if steps == 1 else f"each of the {steps} most uncertain"
    kind = "steps (either region)" if region == "all" else f"{region} steps"
    if steps == 1:
        kind = kind.replace("steps", "step", 1)
    text = (
        f"{initial} initial rollout{'s' if initial > 1 else ''}, {samples} samples at {where} "
        f"{kind}{score}"
    )
    text += f", {rounds} rounds" if rounds > 1 else ""
    earliest = int(given.get("--min-branch-step", 0))
    text += f", no fork before step {earliest}" if earliest else ""
    return text + (f" (`{' '.join(flags)}`)" if flags else "")


def _report_style(result: dict[str, Any]) -> str:
    """The ``--report-style`` a ParallelMuse run used (its own setting, else the common one)."""
    flags = [*result["settings"]["common"], *result["settings"].get("parallel_muse", [])]
    styles = [flags[i + 1] for i, flag in enumerate(flags[:-1]) if flag == "--report-style"]
    return styles[-1] if styles else "auto"


def render_parallel_muse(
    path: Path = REPO / "benchmarks" / "parallel_muse" / "parallel_muse.json",
) -> str:
    """ParallelMuse vs independent rollouts, multi-hop chains (``tools/bench_parallel_muse.py``)."""
    result: dict[str, Any] = json.loads(path.read_text())
    commits = "; ".join(
        f"{name}: {_commits(path.parent / name / 'run.json')}" for name in result["datasets"]
    )
    lines = [
        f"Made by `{result['command']}` ({commits}): per sample, {result['settings']['limit']} "
        "seeded questions, `max_turns` 6, budget 8 trajectories, the shipped `smollm2-parallel`, "
        "BM25, prefix cache emptied before each system. Partial rollout = "
        f"{_muse_setting(result['settings'].get('parallel_muse', []))}, the rest of the budget "
        "fresh; independent = 8 rollouts. Cost = uncached prefill + generated tokens per question "
        f"(the engine's counts); reduction = reports (style `{_report_style(result)}`) + analyst.",
        "",
        "| sample | n | steps per trajectory | agent cost partial / independent | ratio "
        "| exploration tokens ratio | reduction cost (partial) | EM select / majority / weighted "
        "(partial) | EM first rollout | EM independent majority |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, part in {**result["datasets"], "all": result["all"]}.items():
        p, i = part["graphs"]["parallel-muse"], part["graphs"]["rollouts-majority"]
        ratio = part["partial_over_independent"]
        joins = " / ".join(f"{p[k]:.3f}" for k in ("em_join_graph", "em_join_majority",
                                                   "em_join_weighted"))  # fmt: skip
        explore = (
            "–" if ratio["exploration_tokens"] is None else f"{ratio['exploration_tokens']:.2f}x"
        )
        label = f"**{name}**" if name == "all" else name
        lines.append(
            f"| {label} | {p['n']} | {i['steps_per_trajectory']:.1f} | {p['agent_cost']:.0f} / "
            f"{i['agent_cost']:.0f} | **{ratio['agent_cost']:.2f}x** | {explore} | "
            f"{p['reduction_cost']:.0f} | {joins} | {p['em_single']:.3f} | "
            f"{i['em_join_majority']:.3f} |"
        )
    best = result["all"]["best_join"]
    gain = "" if best["relative_gain"] is None else f" ({best['relative_gain']:+.0%})"
    lines += [
        "",
        f"Over all questions the best join of ParallelMuse is `{best['join'][8:]}`: EM "
        f"{best['em']:.3f} against {best['em_single']:.3f} for its first rollout alone{gain} and "
        f"{best['independent_same_join']:.3f} for independent rollouts joined the same way.",
    ]
    split = result["all"].get("by_first_branch") or {}
    if all(group.get("agent_cost") is not None for group in split.values()) and split:
        lines[-1] += (
            " Agent cost ratio by the first fork's step: "
            + "; ".join(
                f"{name} {g['agent_cost']:.2f}x ({g['n']} questions)" for name, g in split.items()
            )
            + "."
        )
    return "\n".join(lines)


def render_reliability(path: Path = REPO / "benchmarks" / "reliability.json") -> str:
    """The fault-injection totals (``tools/bench_reliability.py``)."""
    result: dict[str, Any] = json.loads(path.read_text())
    rows = result["rows"]
    total = {k: sum(r[k] for r in rows) for k in ("cases", "faults_injected", "completed")}
    crashes = sum(r["crashes"] for r in rows)
    muse = [r for r in rows if r["graph"] == "parallel-muse"]
    forked = sum(r["forked"] or 0 for r in muse)
    return (
        f"**Reliability** (`benchmarks/reliability.md`, `{result['command']}`{_at(result)}, "
        "fake model and "
        f"flaky searcher): {total['cases']:,} runs with fuzzed model output (unclosed/nested "
        "tags, hundreds of `##`, huge and non-UTF-8-safe text, broken JSON tool calls), 30% "
        "search faults (raise, time out, return nothing or garbage), 30% model faults "
        "(transient ones retried by the nodes' `RetryPolicy`, context-too-long ones reported), "
        "recursion limits from 2 to 60, and failing ParallelMuse branches (independent rollouts "
        f"and the fork graph, which forked in {forked} of its {sum(r['cases'] for r in muse)} "
        f"runs): {total['faults_injected']:,} faults injected, {total['completed']:,} runs "
        f"completed with an answer or a stated `stop_reason`, **{crashes} crashes**."
    )


def render_retrieval(path: Path = REPO / "benchmarks" / "retrieval" / "retrieval.json") -> str:
    """Gold-title recall and latency per index kind (``tools/bench_retrieval.py``)."""
    result: dict[str, Any] = json.loads(path.read_text())
    lines = [
        f"Made by `{result['command']}`{_at(result)}. Recall: the question itself is the query; "
        "recall@k is the share of gold supporting titles in the top k (all@3: questions with "
        "every gold title in the top 3). Agent sub-queries: every sub-query the shipped policy "
        "wrote in its committed run on the bundled sample (`benchmarks/rl/sft_grpo/`), the share "
        "with a gold page of its question at rank 1 / in the top 3. `hybrid` (the default) and "
        "`hybrid-rrf` look up titles (a query naming a page finds it first); `hybrid-no-titles` "
        "is the default fusion without the lookup. Latency (median seconds): one sub-query, and "
        "four sent as the fan-out sends them (four branches joined into one call by the search "
        "node's `SearchBatcher`), with entity names as sub-queries (gold titles: the agent's own "
        "sub-queries average 3 words); the last column is the same ratio with whole questions "
        "as the four queries.",
        "",
        "| corpus | index | recall@1 | recall@3 | all@3 | recall@10 | agent sub-queries hit@1 "
        "| hit@3 | 1 sub-query s | fan-out of 4 s | 4 / 1 | 4 / 1, questions |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for corpus in ("hotpotqa", "2wiki"):
        block = result[corpus]
        for kind in ("dense", "bm25", "hybrid", "hybrid-no-titles", "hybrid-rrf"):
            r = block[kind]
            agent = r["agent_sub_queries"]
            lines.append(
                f"| {corpus} ({block['questions']} q, {r['passages']:,} passages) | {kind} | "
                f"{r['recall@1']:.3f} | {r['recall@3']:.3f} | {r['all@3']:.3f} | "
                f"{r['recall@10']:.3f} | {agent['hit@1']:.3f} | {agent['hit@3']:.3f} | "
                f"{r['one_query_s']:.4f} | {r['fan_out_4_s']:.4f} | "
                f"{r['fan_out_4_over_one']:.2f} | "
                f"{r['questions_as_queries']['fan_out_4_over_one']:.2f} |"
            )
    return "\n".join(lines)


def _command(markdown: Path) -> str:
    """The ``Command: `...``` line a benchmark's markdown file starts with."""
    match = re.search(r"^Command: `(.+)`$", markdown.read_text(), re.M)
    if not match:
        raise SystemExit(f"{markdown} names no command")
    return match.group(1)


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    return sum(float(r.get(key) or 0) for r in rows) / len(rows) if rows else 0.0


def _answered(rows: list[dict[str, Any]]) -> str:
    return _pct(sum(r["answer"] is not None for r in rows) / len(rows))


def render_hotpotqa200(root: Path = REPO / "benchmarks" / "hotpotqa200") -> str:
    """The untrained agents on 200 questions (``tools/bench_parallel_search.py``)."""
    result: dict[str, Any] = json.loads((root / "parallel_search.json").read_text())
    rows = _rows(root / "results.jsonl")
    direct = [r for r in rows if r["graph"] == "direct"]
    by_class = result["by_class"]
    n_par, n_seq = (by_class[c]["sequential"]["n"] for c in ("parallelizable", "sequential"))
    lines = [
        f"**ParallelSearch vs the sequential Search-R1 agent** — {len(direct)} HotpotQA "
        f"distractor questions ({n_par} comparison = parallelizable, {n_seq} bridge = "
        "sequential), untrained `smollm2` with the few-shot prompt, same engine, same index, "
        f"`max_turns=4`, `top_k=3`; made by `{result['command']}`, rows written at "
        f"{_commits(root / 'run.json')}:",
        "",
        "| class | graph | LLM calls | turns | any `##` turn "
        "| answered | EM | F1 | prompt+completion tokens | cached prompt tokens | wall s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cls in ("parallelizable", "sequential"):
        for graph in ("sequential", "parallel-search"):
            m = by_class[cls][graph]
            lines.append(
                f"| {cls} | {graph} | {m['llm_calls']:.2f} | {m['turns']:.2f} | "
                f"{_pct(m['decomposition_rate'])} | {_pct(m['answered'])} | {m['em']:.3f} | "
                f"{m['f1']:.3f} | {m['tokens']:.0f} | {m['cached_prompt_tokens']:.0f} | "
                f"{m['wall_s']:.1f} |"
            )
    answered = sum(r["answer"] is not None for r in direct)
    tokens = _mean(direct, "prompt_tokens") + _mean(direct, "completion_tokens")
    lines += [
        f"| all | direct (no retrieval) | 1.00 | 0 | - | {answered / len(direct):.1%} "
        f"({answered}/{len(direct)}) | {_mean(direct, 'em'):.3f} | {_mean(direct, 'f1'):.3f} | "
        f"{tokens:.0f} | {_mean(direct, 'cached_prompt_tokens'):.0f} | "
        f"{_mean(direct, 'wall_s'):.1f} |",
        "",
    ]
    ratio = result["llm_call_ratio_parallel_over_sequential"]
    decomposed = sum(
        (r.get("parallel_turns") or 0) > 0 for r in rows if r["graph"] == "parallel-search"
    )
    lines.append(
        f"ParallelSearch used **{ratio['parallelizable']:.1%}** of the sequential agent's LLM "
        f"calls on parallelizable questions ({ratio['sequential']:.1%} on sequential ones); it "
        f"ran a `##` turn on {decomposed} of {len(direct)} questions."
    )
    unconstrained = _rows(root / "unconstrained" / "results.jsonl")
    ids = {r["id"] for r in unconstrained}
    constrained = [r for r in rows if r["graph"] == "parallel-search" and r["id"] in ids]
    if len(constrained) == len(unconstrained):
        lines += [
            "",
            "**Constrained decoding** (vLLM structured outputs with `action_regex`, on by default "
            f"for the embedded model), ParallelSearch on the same {len(ids)} questions with and "
            f"without it: {_answered(constrained)} vs {_answered(unconstrained)} of "
            f"runs answer, {_mean(constrained, 'invalid_steps'):.2f} vs "
            f"{_mean(unconstrained, 'invalid_steps'):.2f} invalid steps per question, "
            f"{_mean(constrained, 'llm_calls'):.2f} vs {_mean(unconstrained, 'llm_calls'):.2f} "
            "LLM calls (`benchmarks/hotpotqa200/unconstrained/`).",
        ]
    return "\n".join(lines)


def render_engine(path: Path = REPO / "benchmarks" / "engine" / "engine.json") -> str:
    """Batching and prefix caching of the in-process engine (``tools/bench_engine.py``)."""
    result: dict[str, Any] = json.loads(path.read_text())
    calls, cache = result["calls"], result["prefix_cache"]
    return (
        f"**Engine** (`benchmarks/engine/`, `{result['command']}`{_at(result)}): {calls} "
        "concurrent calls "
        f"(what {calls} `Send` branches do) take **{result['median_ratio']:.2f}x** the wall time "
        f"of the same {calls} calls in sequence (median of {len(result['runs'])} runs; continuous "
        "batching in the one engine of the process); a second prompt sharing a long prefix had "
        f"{cache['cached_prompt_tokens_second']} of {cache['prompt_tokens']} prompt tokens served "
        "from the prefix cache."
    )


def render_models(root: Path = REPO / "benchmarks" / "models") -> str:
    """Why SmolLM2 is the base (``tools/bench_models.py``)."""
    result: dict[str, Any] = json.loads((root / "models.json").read_text())
    smol, gemma = (result[m]["by_class"]["all"]["parallel-search"] for m in ("smollm2", "gemma3"))
    decomposed = {m: result[m]["by_class"]["all"]["parallel-search"]["decomposition_rate"]
                  for m in result}  # fmt: skip
    return (
        "SmolLM2 is the base because it did better on our ParallelSearch benchmark "
        f"(`benchmarks/models/models.md`, {smol['n']} HotpotQA questions, "
        f"`{_command(root / 'models.md')}`): EM {smol['em']:.3f} vs {gemma['em']:.3f} for Gemma, "
        f"which searched less ({gemma['turns']:.2f} turns per question vs {smol['turns']:.2f}) "
        "and answered from memory. Share of questions with a `##` decomposition under our "
        f"few-shot prompt: SmolLM2 {_pct(decomposed['smollm2'])}, "
        f"Gemma {_pct(decomposed['gemma3'])}."
    )


def render_rl(root: Path = REPO / "benchmarks" / "rl") -> str:
    """The GRPO run from the untrained base and its before/after evaluation."""
    run: dict[str, Any] = json.loads((root / "run.json").read_text())
    steps = [s for s in _rows(root / "metrics.jsonl") if "reward" in s]  # not the final summary
    window = 10
    first, last = (_mean(part, "reward") for part in (steps[:window], steps[-window:]))
    bridge = sum("rollout/decomposition_rate/sequential" in s for s in steps)
    group = run["config"]["group_size"]
    decomposed = sum(
        round(s.get(k, 0.0) * group) for s in steps for k in s if k.startswith("rollout/decomp")
    )
    minutes = sum(s.get("step_time", 0.0) for s in steps) / 60
    evals = json.loads((root / "eval" / "models.json").read_text())
    before, after = (evals[m]["by_class"]["all"]["parallel-search"] for m in evals)
    split = {k: m["decomposition_rate"] * m["n"] for k, m in (("before", before), ("after", after))}
    return (
        f"**GRPO training** (`benchmarks/rl/`, {len(steps)} steps x {group} rollouts of the "
        "ParallelSearch graph, untrained SmolLM2 full fine-tune on CPU, "
        f"{minutes:.0f} min of steps): the reward rose from {first:.2f} to {last:.2f} (mean of "
        f"the first vs last {window} steps), and {decomposed} of {len(steps) * group} training "
        f"rollouts wrote a `##` decomposition. The sample was {bridge} bridge questions of "
        f"{len(steps)}. On {before['n']} held-out questions the trained model searches "
        f"{after['turns']:.2f} vs {before['turns']:.2f} turns, answers {_pct(after['answered'])} "
        f"vs {_pct(before['answered'])}, decomposes on {split['after']:.0f} vs "
        f"{split['before']:.0f} questions and scores EM "
        f"{after['em']:.3f} vs {before['em']:.3f}."
    )


def render_rl_sft(root: Path = REPO / "benchmarks" / "rl" / "sft_grpo") -> str:
    """GRPO from the SFT policy: training summary and the held-out before/after table."""
    run: dict[str, Any] = json.loads((root / "train" / "run.json").read_text())
    steps = [s for s in _rows(root / "train" / "metrics.jsonl") if "reward" in s]
    config, half = run["config"], len(steps) // 2
    minutes = sum(s.get("step_time", 0.0) for s in steps) / 60

    def rate(part: list[dict[str, Any]], cls: str) -> str:
        key = f"rollout/decomposition_rate/{cls}"
        values = [s[key] for s in part if key in s]
        return _pct(sum(values) / len(values)) if values else "-"

    early, late = steps[:half], steps[half:]
    result: dict[str, Any] = json.loads((root / "grpo.json").read_text())
    names = list(result["models"])
    lines = [
        f"**GRPO from the SFT policy** (`benchmarks/rl/sft_grpo/`): `{run['command']}`, "
        f"{len(steps)} steps x {config['group_size']} rollouts, LoRA continuing "
        f"`{config['model']}`'s adapter, {minutes:.0f} min of steps on 2 CPU cores "
        "(`train/reward_curve.png`). Reward, first vs second half of the steps: "
        f"{_mean(early, 'reward'):.2f} -> {_mean(late, 'reward'):.2f}; the rollouts' first "
        f"search decomposed on {rate(early, 'parallelizable')} -> "
        f"{rate(late, 'parallelizable')} of comparison and {rate(early, 'sequential')} -> "
        f"{rate(late, 'sequential')} of bridge questions; EM {_mean(early, 'rollout/em'):.2f}"
        f" -> {_mean(late, 'rollout/em'):.2f}.",
        "",
        f"Held out, greedy, `parallel-search`: `{result['command']}` "
        "(" + ", ".join(f"{k} = `{v}`" for k, v in result["models"].items()) + ").",
        "",
        "| dataset | class | model | n | first search decomposed | LLM calls | search turns "
        "| answered | EM | F1 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for dataset, part in result["datasets"].items():
        for cls in ("parallelizable", "sequential"):
            for name in names:
                m = part["by_class"][cls].get(name)
                if m:
                    lines.append(
                        f"| {dataset} | {cls} | {name} | {m['n']} "
                        f"| {_pct(m['first_search_decomposed'])} | {m['llm_calls']:.2f} "
                        f"| {m['turns']:.2f} | {_pct(m['answered'])} | {m['em']:.3f} "
                        f"| {m['f1']:.3f} |"
                    )
    lines.append("")
    for dataset, part in result["datasets"].items():
        for name, diff in part["changes"].items():
            text = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(diff.items()))
            lines.append(f"- {dataset}, {name} against {names[0]}: EM {text or 'unchanged'}.")
    return "\n".join(lines)


def render_latency(path: Path = REPO / "benchmarks" / "latency" / "latency.json") -> str:
    """Start, decode rates and warm per-question time per engine setting (bench_latency.py)."""
    result: dict[str, Any] = json.loads(path.read_text())
    first = next(iter(result["settings"].values()))["summary"]
    lines = [
        f"Made by `{result['command']}`{_at(result)}, 2 CPU cores, nothing else running. "
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


def render_serving(root: Path = REPO / "benchmarks" / "serving") -> str:
    """Concurrent runs on one shared server, per engine setting (``tools/bench_serving.py``)."""
    runs = [json.loads(p.read_text()) for p in sorted(root.glob("*/serving.json"))]
    first = runs[0]
    lines = [
        f"Made by `tools/bench_serving.py` (`benchmarks/serving/*/`, commands there){_at(first)}:"
        f" one `langgraph-parallel serve` on the 2-core CPU, the first "
        f"{first['levels'][0]['questions']} questions of the bundled HotpotQA sample through "
        "`parallel-search` (`smollm2-parallel`, hybrid index, `ChatVLLMServer`) with 1, 4 and 16 "
        "runs at once, the server's prefix cache emptied before each level.",
        "",
        "| engine | runs at once | questions/s | vs 1 run | p50 s | p95 s | engine batch reached "
        "| prefix-cache hits | answered | errors |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in runs:
        spec = run["engine"].get("speculative_config", "default")
        engine = "no speculation" if spec is None else "n-gram speculation (default)"
        one = run["levels"][0]["throughput_q_per_s"]
        for lv in run["levels"]:
            lines.append(
                f"| {engine} | {lv['concurrency']} | {lv['throughput_q_per_s']:.3f} "
                f"| {lv['throughput_q_per_s'] / one:.2f}x | {lv['p50_s']:.1f} | {lv['p95_s']:.1f} "
                f"| {lv['max_running_requests']:.0f} | {lv['prefix_cache_hit_rate']:.0%} "
                f"| {lv['answered']}/{lv['questions']} | {lv['errors']} |"
            )
    for run in runs:
        fault = run.get("fault")
        if fault:
            reasons = ", ".join(f"{n} {r}" for r, n in fault["stop_reasons"].items())
            lines += [
                "",
                f"Fault run ({fault['concurrency']} runs at once; the server killed with SIGKILL "
                f"after {fault.get('kill_after', 16)} questions and started again, down "
                f"{fault['server_down_s']:.0f} s): **{fault['accounted']} of {fault['questions']}"
                f"** questions ended with an answer or a stated stop reason ({reasons}), "
                f"{fault['distinct_questions']} distinct, none lost or repeated.",
            ]
    return "\n".join(lines)


def render_first_contact(path: Path = REPO / "benchmarks/first_contact/first_contact.json") -> str:
    """Cold ``ask`` by phase and each dtype's speed (``eval/first_contact``)."""
    result: dict[str, Any] = json.loads(path.read_text())
    cpu = result["machine"]
    cold = result["cold_start"]
    first, median = cold["first_ever"], cold["median_run"]
    walls = ", ".join(f"{c['process_wall_s']:.1f}" for c in cold["cold"])
    lines = [
        f"Made by `{result['command']}`{_at(result)}, {cpu['cpu']}, {cpu['cores']} cores "
        f"(avx512_bf16: {'yes' if cpu['avx512_bf16'] else 'no'}, amx: "
        f"{'yes' if cpu['amx'] else 'no'}), `smollm2-parallel`. The README question in a new "
        "process (`ask --json --timings`), timed from outside: first on an empty cache, then "
        f"{len(cold['cold'])} times on that cache "
        f"({walls} s).",
        "",
        "| phase (s) | first ever | cold (median run) |",
        "|---|---|---|",
    ]
    for phase, seconds in first["timings"].items():
        lines.append(f"| {phase} | {seconds:.2f} | {median['timings'].get(phase, 0):.2f} |")
    lines.append(
        f"| **process wall** | **{first['process_wall_s']:.1f}** | "
        f"**{median['process_wall_s']:.1f}** (median {cold['cold_median_s']:.1f}) |"
    )
    dtype = result["dtype"]
    lines += [
        "",
        "| dtype | prefill 1 / 4 prompts tok/s | decode 1 / 4 streams tok/s | warm question s |",
        "|---|---|---|---|",
    ]
    for name, d in dtype["by_dtype"].items():
        mark = " (default here)" if name == dtype["default"] else ""
        lines.append(
            f"| {name}{mark} | {d['prefill_1_tok_s']:.0f} / {d['prefill_4_tok_s']:.0f} | "
            f"{d['decode_1_tok_s']:.0f} / {d['decode_4_tok_s']:.0f} | "
            f"**{d['warm_question_median_s']:.2f}** ({d['warm_questions']} questions) |"
        )
    lines.append("")
    lines.append(
        f"The default ({dtype['default']}) takes {dtype['default_vs_faster']:.2f}x the faster "
        f"dtype's ({dtype['faster']}) warm question on this CPU."
    )
    return "\n".join(lines)


def render_summary() -> str:
    """README.md's one small table: a headline figure of several blocks, as those blocks say it."""
    sft = json.loads((REPO / "benchmarks" / "sft" / "sft.json").read_text())["datasets"]
    muse = json.loads((REPO / "benchmarks" / "parallel_muse" / "parallel_muse.json").read_text())
    serving = [
        json.loads(p.read_text())
        for p in sorted((REPO / "benchmarks" / "serving").glob("*/serving.json"))
    ]
    reliability = json.loads((REPO / "benchmarks" / "reliability.json").read_text())
    lines = [
        "| measure | figure | run |",
        "|---|---|---|",
    ]
    for dataset, part in sft.items():
        ratio = part["parallel_over_sequential"].get("parallelizable")
        by_graph = part["by_class"]["parallelizable"]
        if not ratio:
            continue
        ems = " / ".join(
            f"{by_graph[g]['em']:.3f}" for g in ("parallel-search", "sequential", "direct")
        )
        lines.append(
            f"| Trained ParallelSearch policy vs the equally trained sequential one, {dataset} "
            f"parallelizable questions | **{ratio['llm_calls']:.2f}x** LLM calls, "
            f"**{ratio['turns']:.2f}x** search turns; EM {ems} (parallel / sequential / closed "
            f"book) | `benchmarks/sft/`, {by_graph['parallel-search']['n']} questions |"
        )
    everything = muse["all"]
    lines.append(
        "| ParallelMuse: agent cost (uncached prefill + generated tokens) of partial rollout vs "
        "8 independent rollouts | "
        f"**{everything['partial_over_independent']['agent_cost']:.2f}x** | "
        f"`benchmarks/parallel_muse/`, {everything['graphs']['parallel-muse']['n']} multi-hop "
        "questions |"
    )
    # First contact replaces the latency row: measured on today's default engine and policy.
    contact = json.loads((REPO / "benchmarks/first_contact/first_contact.json").read_text())
    cpu = contact["machine"]
    where = f"{cpu['cpu']}, {cpu['cores']} cores{', avx512_bf16' if cpu['avx512_bf16'] else ''}"
    cold, dtype = contact["cold_start"], contact["dtype"]
    warm = dtype["by_dtype"][dtype["default"]]["warm_question_median_s"]
    first = cold["first_ever"]["process_wall_s"]
    lines.append(
        f"| Cold `ask` of the README question, new process (engine start included), median of "
        f"{len(cold['cold'])}; first ever (model preparation included) | "
        f"**{cold['cold_median_s']:.1f} s**; {first:.1f} s | "
        f"`benchmarks/first_contact/`{_at(contact)}, {where} |"
    )
    lines.append(
        f"| Median warm question, default engine ({dtype['default']}, chosen for this CPU) | "
        f"**{warm:.2f} s** | `benchmarks/first_contact/`{_at(contact)}, {where} |"
    )
    for run in serving:
        if run["engine"].get("speculative_config", "default") is not None:
            top = run["levels"][-1]
            lines.append(
                f"| One `langgraph-parallel serve`, {top['concurrency']} runs at once | "
                f"{top['throughput_q_per_s']:.3f} questions/s, {top['errors']} errors | "
                f"`benchmarks/serving/`{_at(run)} |"
            )
    rows = reliability["rows"]
    lines.append(
        f"| Fault injection (fuzzed model output, flaky searcher) | "
        f"{sum(r['cases'] for r in rows):,} runs, **{sum(r['crashes'] for r in rows)} crashes** "
        f"| `benchmarks/reliability.md`{_at(reliability)} |"
    )
    return "\n".join(lines)


BLOCKS: dict[str, Callable[[], str]] = {
    "hotpotqa200-results": render_hotpotqa200,
    "engine-results": render_engine,
    "models-results": render_models,
    "rl-results": render_rl,
    "rl-sft-results": render_rl_sft,
    "reliability-results": render_reliability,
    "sft-results": render_sft,
    "muse-results": render_parallel_muse,
    "retrieval-results": render_retrieval,
    "latency-results": render_latency,
    "first-contact-results": render_first_contact,
    "serving-results": render_serving,
    "summary-results": render_summary,
}
"""Block name -> renderer."""


def block(text: str, name: str) -> str | None:
    """The current content of block ``name`` in ``text`` (``None`` if it has no such block)."""
    match = re.search(rf"<!-- {name}:start -->\n(.*?)<!-- {name}:end -->", text, re.S)
    return match.group(1).removesuffix("\n") if match else None


def replace(text: str, name: str, body: str) -> str:
    """``text`` with block ``name``'s content replaced by ``body``."""
    return re.sub(
        rf"(<!-- {name}:start -->\n).*?(<!-- {name}:end -->)",
        lambda m: m.group(1) + body + "\n" + m.group(2),
        text,
        flags=re.S,
    )


def homes(files: list[Path]) -> dict[str, Path]:
    """Block name -> the one file that holds it; exits naming a block missing or held twice."""
    found: dict[str, list[Path]] = {name: [] for name in BLOCKS}
    for path in files:
        text = path.read_text()
        for name in BLOCKS:
            if block(text, name) is not None:
                found[name].append(path)
    for name, paths in found.items():
        if len(paths) != 1:
            where = ", ".join(str(p) for p in paths) or "no page"
            raise SystemExit(f"block <!-- {name}:start --> must be in one page, found in {where}")
    return {name: paths[0] for name, paths in found.items()}


def rewrite_all(files: list[Path]) -> dict[Path, tuple[str, str]]:
    """Each file that holds blocks -> (its current text, its text with every block re-rendered)."""
    texts: dict[Path, tuple[str, str]] = {}
    for name, path in homes(files).items():
        current, new = texts.get(path, (path.read_text(),) * 2)
        texts[path] = (current, replace(new, name, BLOCKS[name]()))
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if a block is stale")
    args = parser.parse_args()
    stale = []
    for path, (current, new) in rewrite_all(pages()).items():
        if new == current:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(new)
    for path in stale:
        verb = "stale" if args.check else "rewritten"
        print(f"{path.relative_to(REPO)}: result blocks {verb}", file=sys.stderr)
    sys.exit(1 if args.check and stale else 0)


if __name__ == "__main__":
    main()
