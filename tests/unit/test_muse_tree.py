"""The picture of a ParallelMuse run: the tree, its Mermaid text, PNG/SVG files, ``ask --tree``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import langgraph_parallel.agent.run as agent_run
import langgraph_parallel.apps.registry as registry
import langgraph_parallel.models.served as served
import langgraph_parallel.retrieval.indexes as indexes
from langgraph_parallel.agent.run import QuestionRun
from langgraph_parallel.apps.cli import main
from langgraph_parallel.parallel_muse.regions import region_spans
from langgraph_parallel.parallel_muse.tree import TreeNode, draw_tree, mermaid_tree, tree_nodes

TRICKY = 'He said "hi" [1] <b> #2'


def step(text: str, origin: str, message_index: int, logprob: float = -0.5) -> dict[str, Any]:
    """A step whose text is split into 4-character tokens, each with two candidates."""
    tokens = [text[i : i + 4] for i in range(0, len(text), 4)]
    logprobs = [
        {
            "token": tok,
            "logprob": logprob,
            "top_logprobs": [{"token": tok, "logprob": logprob}, {"token": "x", "logprob": -2.0}],
        }
        for tok in tokens
    ]
    spans = region_spans(text)
    return {
        "text": text,
        "logprobs": logprobs,
        "regions": {name: [list(s) for s in found] for name, found in spans.items()},
        "usage": {},
        "action": "answer" if "<answer>" in text else "search" if "<search>" in text else "invalid",
        "message_index": message_index,
        "origin": origin,
    }


def trajectory(
    tid: str,
    index: int,
    steps: list[dict[str, Any]],
    answer: str | None,
    parent: str | None = None,
    branch_step: int | None = None,
    stop_reason: str = "answered",
) -> dict[str, Any]:
    return {
        "id": tid,
        "index": index,
        "parent": parent,
        "branch_step": branch_step,
        "round": 0,
        "steps": steps,
        "answer": answer,
        "stop_reason": stop_reason,
    }


def make_output() -> dict[str, Any]:
    """t0 (3 steps), t1 forked at t0's step 1, t2 at step 0, t3 fresh and unanswered."""
    s0 = step("<think>two hops</think> <search>capital of France ## its mayor</search>", "t0", 1)
    t0 = [
        s0,
        step("<search>Paris mayor</search>", "t0", 3),
        step("<answer>Paris</answer>", "t0", 5),
    ]
    t1 = [s0, step("<search>Lyon</search>", "t1", 3, -1.5), step("<answer>Lyon</answer>", "t1", 5)]
    t2 = [step(f"<answer>{TRICKY}</answer>", "t2", 1)]
    t3 = [step("<search>France</search>", "t3", 1)]
    return {
        "question": "What is the capital of France?",
        "trajectories": [
            trajectory("t0", 0, t0, "Paris"),
            trajectory("t1", 1, t1, "Lyon", parent="t0", branch_step=1),
            trajectory("t2", 2, t2, TRICKY, parent="t0", branch_step=0),
            trajectory("t3", 3, t3, None, stop_reason="max_turns: 4"),
        ],
        "branch_points": [
            {
                "trajectory": "t0",
                "step": 1,
                "region": "exploration",
                "mode": "entropy",
                "score": 1.7,
            },
            {
                "trajectory": "t0",
                "step": 0,
                "region": "exploration",
                "mode": "entropy",
                "score": 1.2,
            },
        ],
        "aggregation": {"chosen": "t1"},
    }


@pytest.fixture
def output() -> dict[str, Any]:
    return make_output()


def by_key(nodes: list[TreeNode]) -> dict[tuple[str | None, int | None], TreeNode]:
    return {(n.trajectory, n.step): n for n in nodes if n.kind == "step"}


def test_forks_hang_under_the_step_before_their_branch_step(output: dict[str, Any]) -> None:
    nodes = tree_nodes(output)
    steps = by_key(nodes)
    assert nodes[0].id == "q" and nodes[0].parent is None
    assert len(steps) == 3 + 2 + 1 + 1  # one node per own step: t1 shares t0's step 0
    assert steps[("t0", 1)].parent == steps[("t0", 0)].id
    assert steps[("t1", 1)].parent == steps[("t0", 0)].id
    assert steps[("t1", 2)].parent == steps[("t1", 1)].id
    assert steps[("t2", 0)].parent == "q"
    assert steps[("t3", 0)].parent == "q"
    assert all(re.fullmatch(r"\w+", n.id) for n in nodes)
    assert [n.depth for n in nodes if n.kind == "step" and n.trajectory == "t1"] == [2, 3]
    leaves = {n.trajectory: n for n in nodes if n.kind == "leaf"}
    assert leaves["t1"].parent == steps[("t1", 2)].id
    assert leaves["t3"].unanswered and "max_turns: 4" in leaves["t3"].lines
    assert "(chosen)" in leaves["t1"].lines


def test_labels_show_action_uncertainty_and_branch_points(output: dict[str, Any]) -> None:
    steps = by_key(tree_nodes(output))
    first = steps[("t0", 0)].lines
    assert first[:2] == ("t0 step 0: search", "capital of France ## its mayor")
    # Every token has candidates at -0.5 and -2.0: the same entropy in each region.
    assert re.fullmatch(r"entropy: reasoning \d\.\d\d, exploration \d\.\d\d", first[2])
    assert first[3] == "branch point (exploration entropy 1.20)"
    assert steps[("t0", 1)].branch_point and not steps[("t1", 1)].branch_point
    assert re.search(r"answer \d\.\d\d$", steps[("t0", 2)].lines[-1])
    assert steps[("t0", 2)].lines[1] == "Paris"
    ppl = by_key(tree_nodes(output, mode="ppl"))[("t1", 1)].lines
    assert f"exploration {2.718281828**1.5:.2f}" in ppl[-1]
    # Without a mode the tree shows the score that picked the branch points; ppl (the graphs'
    # default) when they do not say.
    for point in output["branch_points"]:
        del point["mode"]
    unsaid = by_key(tree_nodes(output))
    assert unsaid[("t1", 1)].lines == ppl
    assert unsaid[("t0", 0)].lines[3] == "branch point (exploration 1.20)"


def test_chosen_path_and_classes_in_mermaid(output: dict[str, Any]) -> None:
    nodes = tree_nodes(output)
    steps = by_key(nodes)
    chosen = {n.id for n in nodes if n.chosen}
    leaf = next(n.id for n in nodes if n.kind == "leaf" and n.trajectory == "t1")
    assert chosen == {"q", steps[("t0", 0)].id, steps[("t1", 1)].id, steps[("t1", 2)].id, leaf}
    text = mermaid_tree(output)
    assert text.startswith("flowchart TD\n")
    classes = {
        line.split()[-1]: set(line.split()[1].split(","))
        for line in text.splitlines()
        if line.strip().startswith("class ")
    }
    assert classes["chosen"] == chosen
    assert classes["branch"] == {steps[("t0", 0)].id, steps[("t0", 1)].id}
    assert classes["unanswered"] == {n.id for n in nodes if n.unanswered}
    assert {"classDef chosen", "classDef branch", "classDef unanswered"} <= {
        " ".join(line.split()[:2]) for line in text.splitlines()
    }
    assert f"    q --> {steps[('t2', 0)].id}" in text.splitlines()
    assert "linkStyle" in text


def test_mermaid_labels_are_escaped(output: dict[str, Any]) -> None:
    text = mermaid_tree(output)
    label = next(line for line in text.splitlines() if "t2 step 0" in line)
    body = label.split('["', 1)[1].rsplit('"]', 1)[0]
    assert "He said #quot;hi#quot; #91;1#93; #lt;b#gt; #35;2" in body
    assert not set('"[]<>') & set(body.replace("<br/>", ""))
    for line in text.splitlines()[1:]:
        if '["' in line:  # a node: quoted label, nothing after it
            assert re.fullmatch(r'    \w+\["[^"]*"\]', line), line


def test_files_by_suffix(output: dict[str, Any], tmp_path: Path) -> None:
    png, svg = draw_tree(output, tmp_path / "t.png"), draw_tree(output, tmp_path / "t.svg")
    assert png.read_bytes().startswith(b"\x89PNG")
    assert "<svg" in svg.read_text(encoding="utf-8")
    md = draw_tree(output, tmp_path / "t.md").read_text(encoding="utf-8")
    assert md.startswith("```mermaid\nflowchart TD\n") and md.endswith("```\n")
    assert draw_tree(output, tmp_path / "t.mmd").read_text(encoding="utf-8") == mermaid_tree(output)
    with pytest.raises(ValueError, match=r"\.png, \.svg, \.mmd, \.md"):
        draw_tree(output, tmp_path / "t.txt")
    # A run cut short before any rollout: the question alone still draws.
    assert draw_tree({"question": "q"}, tmp_path / "empty.png").stat().st_size > 0


def no_model(*_: Any, **__: Any) -> Any:
    raise AssertionError("a model was loaded")


def test_ask_tree_rejects_graphs_without_trajectories_before_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(registry, "load_model", no_model)
    tree = str(tmp_path / "x.png")
    assert main(["ask", "--graph", "parallel-search", "--tree", tree, "Who?"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --tree needs --graph parallel-muse, rollouts-majority, " + (
        "parallel-muse-agent (got parallel-search)."
    )
    assert main(["ask", "--graph", "parallel-muse", "--tree", str(tmp_path / "x.txt"), "Who?"]) == 2
    assert "use one of .png, .svg, .mmd, .md" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()


def test_ask_tree_writes_the_file_after_the_answer(
    output: dict[str, Any],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run = QuestionRun("Lyon", "answered", {}, 0.1, state={**output, "answer": "Lyon"})
    monkeypatch.setattr(served, "find_server", lambda *_: None)
    monkeypatch.setattr(registry, "load_model", lambda *_, **__: object())
    monkeypatch.setattr(registry, "build_graph", lambda *_, **__: object())
    monkeypatch.setattr(indexes, "corpus_index", lambda *_, **__: object())
    monkeypatch.setattr(agent_run, "run_question", lambda *_, **__: run)
    tree = tmp_path / "run.svg"
    assert main(["ask", "--graph", "rollouts-majority", "--tree", str(tree), "Capital?"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == f"tree: {tree}"
    assert out.index("answer: Lyon") < len(out) - 1
    assert "<svg" in tree.read_text(encoding="utf-8")
