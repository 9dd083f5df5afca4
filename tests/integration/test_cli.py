"""The README's main command and the CLI's handling of bad input, on the real engine."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

from langgraph_parallel.agent.state import COUNTER_KEYS
from langgraph_parallel.apps.cli import main

pytestmark = [pytest.mark.integration, pytest.mark.engine]

QUESTION = "Were Scott Derrickson and Ed Wood of the same nationality?"
JSON_KEYS = {*COUNTER_KEYS, "wall_s", "answer"}


def cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "langgraph_parallel.apps.cli", *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **env},
    )


def test_ask_prints_answer_counters_and_retrieved_titles(chat_model, hotpot_index, capsys):
    assert main(["ask", QUESTION]) == 0
    captured = capsys.readouterr()
    out = captured.out
    # The live view on stderr: the first step, then its sub-queries as they start and end.
    live = captured.err.splitlines()
    assert live[0].startswith("step 1: ")
    if live[0].startswith("step 1: search"):
        assert any(line.startswith("  search 1.0 started: ") for line in live)
        assert any(line.startswith("  search 1.0 done: ") for line in live)
    fields = dict(
        line.split(": ", 1)
        for line in out.splitlines()
        if ": " in line and not line.startswith(" ")
    )
    assert int(fields["llm_calls"]) > 0
    assert int(fields["prompt_tokens"]) > 0
    assert "answer" in fields
    # The trace shows every model step and every searched sub-query with its titles, whatever
    # the model chose to do on this CPU.
    trace = out.split("trace:", 1)[1].split("\nanswer:", 1)[0].splitlines()
    assert sum(line.startswith("  step: ") for line in trace) == int(fields["llm_calls"])
    searched = [line for line in trace if line.startswith("  turn ")]
    assert len(searched) == int(fields["sub_queries"])
    assert all(" -> " in line for line in searched)


# What `ask` may print to stderr: its live view (agent steps, sub-queries, rollouts) and, once
# per cache, the note that a model folder is being prepared.
PROGRESS = re.compile(r"^(step \d+|  search \S+ (started|done): |rollout \d+ |prepar(ing|ed) )")


def noise(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.strip() and not PROGRESS.match(line)]


def test_the_readme_ask_prints_only_progress_and_the_result_and_times_its_phases():
    # Quiet by default: no library log, warning or progress bar (vLLM's INFO log, torch's NUMA
    # and Triton notes, vLLM's FutureWarning, its checkpoint bar, Triton's leak report at exit).
    # (The test suite turns the background server off: this is the one-shot path; the JSON
    # output's keys are checked on the served path, test_serve_command_... below.)
    result = cli("ask", "--timings", QUESTION)
    assert result.returncode == 0, result.stderr[-2000:]
    assert noise(result.stderr) == []
    assert "\nanswered by: in process\n" in result.stdout
    timings = result.stdout.split("\ntimings:\n", 1)[1].splitlines()
    phases = dict(line.strip().rsplit(": ", 1) for line in timings)
    assert list(phases)[:2] == ["start", "imports"] and list(phases)[-1] == "total"
    assert {"index", "engine start", "engine shutdown"} <= set(phases)
    seconds = [float(v.removesuffix(" s")) for v in phases.values()]
    assert all(s >= 0 for s in seconds) and seconds[-1] > 0
    assert abs(sum(seconds[:-1]) - seconds[-1]) < 0.02 * len(seconds)


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


def test_index_command_indexes_a_new_corpus_once(tmp_path, monkeypatch, capsys):
    corpus = tmp_path / "mine.jsonl"
    rows = [
        {"id": f"d{i}", "title": f"T{i}", "text": f"Paragraph {i} about rivers."} for i in range(5)
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    from langgraph_parallel.retrieval import indexes

    cache = tmp_path / "cache"
    monkeypatch.setenv("LANGGRAPH_PARALLEL_CACHE", str(cache))
    monkeypatch.setattr(indexes, "_CACHE", {})
    assert main(["index", "--corpus", str(corpus)]) == 0
    assert capsys.readouterr().out.strip() == "indexed 5 passages (hybrid)"
    assert len(list((cache / "embeddings").glob("*.npy"))) == 1  # the dense half
    assert len(list((cache / "bm25").iterdir())) == 1  # the BM25 half
    files = {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()}
    monkeypatch.setattr(indexes, "_CACHE", {})  # a new process: only the disk cache is left
    assert main(["index", "--corpus", str(corpus)]) == 0
    assert {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file()} == files


def test_index_command_indexes_a_folder_of_text_files(tmp_path, monkeypatch, capsys):
    """A folder of .txt/.md files is a corpus: real MiniLM + BM25, one document per file."""
    docs = tmp_path / "my_notes"
    (docs / "rivers").mkdir(parents=True)
    (docs / "rivers" / "nile.md").write_text("# The Nile\n\nThe Nile flows north into Egypt.\n")
    (docs / "rivers" / "amazon.txt").write_text("The Amazon carries more water than any river.")
    (docs / "deserts.txt").write_text("The Sahara is the largest hot desert.")
    from langgraph_parallel.retrieval import indexes

    monkeypatch.setenv("LANGGRAPH_PARALLEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(indexes, "_CACHE", {})
    assert main(["index", "--corpus", str(docs)]) == 0
    assert capsys.readouterr().out.strip() == "indexed 3 passages (hybrid)"
    index = indexes.corpus_index(str(docs))
    best = index.batch_search(["Which river flows into Egypt?", "biggest hot desert"], k=1)
    assert [(r[0].id, r[0].title) for r in best] == [
        ("rivers/nile.md", "The Nile"),
        ("deserts.txt", "deserts"),
    ]
    (docs / "deserts.txt").write_text("The Gobi is a cold desert in Asia.")
    os.utime(docs / "deserts.txt", (1e9 + 1, 2e9))  # an edit the in-process memo must notice
    edited = indexes.corpus_index(str(docs))
    assert edited is not index
    assert edited.batch_search(["cold desert in Asia"], k=1)[0][0].text.startswith("The Gobi")


def test_serve_command_serves_the_trained_policy_until_stopped(tmp_path):
    """`serve` execs vLLM's server with the merged policy; flags after -- reach vLLM.

    Started as the background server `ask` starts (`--background`: it records itself once
    warm), so a later `ask` finds and reuses it, and `serve --status/--stop` manage it.
    """
    import shutil
    import urllib.request

    from langgraph_parallel.apps import daemon
    from langgraph_parallel.models.server import stop_server
    from langgraph_parallel.prompts import rules_prompt
    from tests.servers import free_port, wait_for_http

    daemon.stop_daemons("smollm2-parallel")  # a developer's own background server, if any
    port, log = free_port(), tmp_path / "serve.log"
    entry = shutil.which("langgraph-parallel", path=os.path.dirname(sys.executable))
    assert entry, "the console entry point is installed beside the interpreter"
    command = [entry, "serve", "--port", str(port), "--background", "--idle-timeout", "900"]
    command += ["--", "--kv-cache-memory-bytes", "536870912"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=out, start_new_session=True)
    try:
        wait_for_http(f"http://127.0.0.1:{port}/v1/models", proc, 600, str(log))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=10) as reply:
            served = [m["id"] for m in json.load(reply)["data"]]
        assert served == ["smollm2-parallel"]
        assert "--kv-cache-memory-bytes 536870912" in log.read_text(errors="replace")
        # It warms itself up (grammar compile, first logprobs) and then says it is ready.
        ready = f"serving smollm2-parallel at http://127.0.0.1:{port}/v1 (warmed up in "
        deadline = time.monotonic() + 300
        while ready not in log.read_text(errors="replace") and time.monotonic() < deadline:
            assert proc.poll() is None, log.read_text(errors="replace")[-2000:]
            time.sleep(0.5)
        assert ready in log.read_text(errors="replace")
        body = {
            "model": "smollm2-parallel",
            "prompt": rules_prompt(
                "Were Harvey Pekar and Denise Levertov born in the same year?", True
            ),
            "max_tokens": 24,
            "temperature": 0.0,
            "logprobs": 5,
        }
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=300) as reply:
            choice = json.load(reply)["choices"][0]
        # Every training trajectory of the policy opens with a <think> step: among the first
        # token's five most likely on any CPU and dtype (greedy picks it here, but a near-tie
        # elsewhere need not).
        assert choice["text"]
        first = choice["logprobs"]["top_logprobs"][0]
        assert any(token.strip().startswith("<") for token in first), first

        # A second process asks on the running server: no engine of its own, the same output.
        url = f"http://127.0.0.1:{port}"
        asked = cli("ask", "--server", url, "--json", QUESTION)
        assert asked.returncode == 0, asked.stderr[-2000:]
        assert f"served by the server at {url}/v1" in asked.stderr
        payload = json.loads(asked.stdout.strip().splitlines()[-1])
        assert set(payload) == JSON_KEYS and payload["llm_calls"] > 0
        if payload["llm_calls"] > 1:  # later steps extend the first step's prompt
            assert payload["cached_prompt_tokens"] > 0
        wrong = cli("ask", "--server", url, "--model", "smollm2", QUESTION)
        assert wrong.returncode == 2
        assert "serves smollm2-parallel, not 'smollm2'" in wrong.stderr.splitlines()[-1]
        # A plain ask finds it as its background server and runs the whole question there:
        # no engine, no index and no graph of its own, and says so.
        reused = cli("ask", "--json", "--timings", QUESTION, LANGGRAPH_PARALLEL_DAEMON="1")
        assert reused.returncode == 0, reused.stderr[-2000:]
        payload = json.loads(reused.stdout.strip().splitlines()[-1])
        assert set(payload) == JSON_KEYS | {"timings", "answered_by"}
        where = f"the background server at {url}/v1 (reused; question and index there)"
        assert payload["answered_by"] == where and payload["llm_calls"] > 0
        assert not {"imports", "index", "engine start"} & set(payload["timings"])
        # --tree and --retry-deadline need the run here: the server takes its model calls only.
        flags = ("ask", "--json", "--timings", "--retry-deadline", "5", QUESTION)
        here = cli(*flags, LANGGRAPH_PARALLEL_DAEMON="1")
        assert here.returncode == 0, here.stderr[-2000:]
        payload = json.loads(here.stdout.strip().splitlines()[-1])
        assert payload["answered_by"] == f"the background server at {url}/v1 (reused)"
        assert "engine start" in payload["timings"]  # no engine here: 0 s
        assert "engine shutdown" not in payload["timings"]
        status = cli("serve", "--status")
        assert f"smollm2-parallel: {url}/v1 pid {proc.pid}, answering" in status.stdout
        stopped = cli("serve", "--stop")
        assert f"stopped the background server of smollm2-parallel (pid {proc.pid})" in (
            stopped.stdout
        )
        assert proc.wait(timeout=60) is not None
        assert daemon.daemons() == []
    finally:
        stop_server(proc)
    assert proc.returncode is not None
    with pytest.raises(ProcessLookupError):  # the vLLM server in its process group is gone too
        os.killpg(proc.pid, 0)
