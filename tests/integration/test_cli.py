"""The README's main command and the CLI's handling of bad input, on the real engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from langgraph_parallel.agent.state import COUNTER_KEYS
from langgraph_parallel.apps.cli import main

pytestmark = pytest.mark.integration

QUESTION = "Were Scott Derrickson and Ed Wood of the same nationality?"
JSON_KEYS = {*COUNTER_KEYS, "wall_s", "answer"}


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "langgraph_parallel.apps.cli", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ},
    )


def test_ask_prints_answer_counters_and_retrieved_titles(chat_model, hotpot_index, capsys):
    assert main(["ask", QUESTION]) == 0
    out = capsys.readouterr().out
    fields = dict(
        line.split(": ", 1)
        for line in out.splitlines()
        if ": " in line and not line.startswith(" ")
    )
    assert int(fields["llm_calls"]) > 0
    assert int(fields["prompt_tokens"]) > 0
    assert "answer" in fields
    trace = out.split("trace:", 1)[1]
    assert "Scott Derrickson" in trace or "Ed Wood" in trace


def test_ask_json_from_the_console_entry_point_has_exactly_the_documented_keys():
    result = cli("ask", "--json", "--graph", "sequential", QUESTION)
    assert result.returncode == 0, result.stderr[-2000:]
    payload = json.loads(result.stdout.strip().splitlines()[-1])
    assert set(payload) == JSON_KEYS
    assert payload["llm_calls"] > 0 and payload["prompt_tokens"] > 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["ask", "   "], "question is empty"),
        (["ask", "--corpus", "/nonexistent/corpus.jsonl", "x"], "/nonexistent/corpus.jsonl"),
        (["ask", "--model", "/tmp", "x"], "is not a model folder"),
        (["ask", "--model", "./no-such-model", "x"], "does not exist"),
    ],
)
def test_user_errors_are_one_line_without_traceback(args, message):
    result = cli(*args)
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error: ") and message in lines[-1]
    assert "Traceback" not in result.stderr


def test_index_command_embeds_a_new_corpus_once(tmp_path, monkeypatch, capsys):
    corpus = tmp_path / "mine.jsonl"
    rows = [
        {"id": f"d{i}", "title": f"T{i}", "text": f"Paragraph {i} about rivers."} for i in range(5)
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setenv("LANGGRAPH_PARALLEL_CACHE", str(tmp_path / "cache"))
    assert main(["index", "--corpus", str(corpus)]) == 0
    assert capsys.readouterr().out.strip() == "indexed 5 passages"
    cached = list((tmp_path / "cache").rglob("*.npy"))
    assert len(cached) == 1  # the embeddings, reused by the next run
    assert main(["index", "--corpus", str(corpus)]) == 0
    assert list((tmp_path / "cache").rglob("*.npy")) == cached
