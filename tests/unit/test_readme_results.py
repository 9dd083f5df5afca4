"""Result blocks (docs/results.md, README.md, ...) are rendered from the committed benchmark
files; stale, missing or doubled ones fail here."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from lab import results as tool
from lab.experiments.muse.muse_tables import muse_setting
from lab.experiments.sft.sft_tables import render_sft
from lab.staleness import full_history
from lab.summary_block import render_summary

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", list(tool.BLOCKS))
def test_block_matches_its_benchmark_file(name: str) -> None:
    if name in tool.HISTORY_BLOCKS and not full_history(REPO):
        pytest.skip("the index's stale labels read git history; this checkout has none")
    home = tool.homes(tool.pages())[name]  # exits unless the block is in exactly one page
    current = tool.block(home.read_text(), name)
    assert current == tool.BLOCKS[name](), "run: .venv/bin/langgraph-parallel results"


def test_the_blocks_live_in_the_results_page_and_the_readme() -> None:
    homes = tool.homes(tool.pages())
    assert homes["summary-results"] == REPO / "README.md"
    for name in ("sft-results", "muse-results", "latency-results", "serving-results"):
        assert homes[name] == REPO / "docs" / "results.md"


def test_check_passes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "langgraph_parallel.apps.cli", "results", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def test_a_block_missing_or_in_two_pages_is_refused(tmp_path: Path) -> None:
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    every = "".join(f"<!-- {n}:start -->\nSTALE\n<!-- {n}:end -->\n" for n in tool.BLOCKS)
    one.write_text(every)
    two.write_text("<!-- sft-results:start -->\nold\n<!-- sft-results:end -->\n")
    with pytest.raises(SystemExit, match="sft-results.*one.md, .*two.md"):
        tool.homes([one, two])
    two.write_text("")
    one.write_text(every.replace("engine-results", "engine-gone"))
    with pytest.raises(SystemExit, match="engine-results.*no page"):
        tool.homes([one, two])


def test_rewrite_fills_every_block_where_it_is(tmp_path: Path) -> None:
    one, two = tmp_path / "one.md", tmp_path / "two.md"
    stale = {n: f"# {n}\n<!-- {n}:start -->\nSTALE\n<!-- {n}:end -->\n" for n in tool.BLOCKS}
    one.write_text("".join(text for n, text in stale.items() if n != "summary-results"))
    two.write_text("intro\n<!-- summary-results:start -->\n<!-- summary-results:end -->\nend\n")
    texts = tool.rewrite_all([one, two])
    assert set(texts) == {one, two}
    new_two = texts[two][1]
    assert new_two.startswith("intro\n") and new_two.endswith("end\n")
    assert tool.block(new_two, "summary-results") == render_summary()
    assert "STALE" not in texts[one][1]


def test_a_changed_figure_makes_the_block_stale(tmp_path: Path) -> None:
    result = json.loads((REPO / "benchmarks/sft/sft.json").read_text())
    part = result["datasets"]["hotpotqa"]["by_class"]["parallelizable"]["parallel-search"]
    part["em"] += 0.5
    changed = tmp_path / "sft.json"
    changed.write_text(json.dumps(result))
    assert render_sft(changed) != render_sft()
    assert f"{part['em']:.3f}" in render_sft(changed)


def test_every_figure_of_the_readme_summary_is_in_a_full_block() -> None:
    blocks = "\n".join(
        render() for name, render in tool.BLOCKS.items() if name != "summary-results"
    )
    rows = render_summary().splitlines()[2:]
    assert rows
    for row in rows:
        figures = row.split(" | ")[1]
        for number in re.findall(r"\d[\d,.]*\d|\d", figures):
            assert number in blocks, f"{number} of {figures!r} is in no block"


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (
            [],
            "1 initial rollout, 3 samples at each of the 2 most uncertain exploration steps",
        ),
        (
            ["--mode", "entropy", "--top-k-steps", "1", "--samples-per-step", "7"],
            "1 initial rollout, 7 samples at the most uncertain exploration step by entropy "
            "(`--mode entropy --top-k-steps 1 --samples-per-step 7`)",
        ),
        (["--region", "reasoning", "--rounds", "2"], "reasoning steps, 2 rounds (`--region"),
        (["--mode", "ppl"], "exploration steps by perplexity (`--mode ppl`)"),
        (["--min-branch-step", "1"], "exploration steps, no fork before step 1 (`--min"),
    ],
)
def test_the_muse_block_says_which_branching_settings_ran(flags: list[str], words: str) -> None:
    assert words in muse_setting(flags)


def test_the_latency_block_shows_replayed_calls_only_for_settings_that_replayed(
    tmp_path: Path,
) -> None:
    from lab.experiments.latency.latency_served import render_latency

    def figures(decode: float) -> dict[str, float]:
        return {
            "per_question_s": 1.5,
            "ttft_per_call_s": 0.16,
            "prefill_tok_per_s": 2200.0,
            "decode_tok_per_s": decode,
            "completion_tokens_per_question": 157.0,
        }

    summary = {"questions": 2, "first_question_s": 4.0, "median_wall_s": 1.5, "em": 0.5}
    summary |= {"f1": 0.5, "outside_engine_share": 0.02}
    setting = {"start_s": 12.0, "cold_ask_s": [25.0, 26.0], "summary": summary}
    setting |= {"single_tok_s": 170.0, "batch4_tok_s": 370.0, "batch8_tok_s": 600.0}
    calls = {"questions": 2, "calls": 5, "as_run": figures(151.0), "probe_text": figures(214.0)}
    result = {"command": "bench run latency", "commit": "abc1234", "settings": {}}
    result["settings"] = {"eager": setting, "eager+ngram": {**setting, "calls": calls}}
    path = tmp_path / "latency.json"
    path.write_text(json.dumps(result))
    text = render_latency(path)
    assert "The same 2 questions' 5 engine calls replayed on `eager+ngram`" in text
    assert "| as_run | 1.50 | 0.160 | 2200 | **151** | 157 |" in text
    assert "| probe_text | – | 0.160 | 2200 | **214** | 157 |" in text
    assert "replayed on `eager`" not in text
    del result["settings"]["eager+ngram"]["calls"]
    path.write_text(json.dumps(result))
    assert "replayed" not in render_latency(path)
