"""The large-corpus experiment's own logic: the pool of real passages, the grown corpus."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from lab.experiments.retrieval.large_corpus import grow, measure, passages

pytest.importorskip("faiss")


def write(path: Path, rows: list[dict]) -> Path:
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)
    return path


def test_the_pool_keeps_the_bundled_order_then_new_paragraphs_then_sentences(
    tmp_path: Path,
) -> None:
    bundled = write(
        tmp_path / "corpus.jsonl.gz",
        [{"title": "A", "text": "One. Two.", "sentences": ["One.", " Two."]}],
    )
    context = [
        {"title": "A", "sentences": ["One.", " Two."]},
        {"title": "B", "sentences": ["Solo."]},
    ]
    for name in (
        "hotpotqa_dev_distractor_subset",
        "hotpotqa_dev_fullwiki_subset",
        "2wikimultihopqa_dev_sample500",
        "musique_dev_with_paragraphs200",
    ):
        write(tmp_path / f"{name}.jsonl.gz", [{"context": context}])
    rows = passages(tmp_path, bundled)
    # The bundled paragraph first (its shipped vector row), a new paragraph, then the sentences
    # of the two-sentence paragraph; duplicates once.
    assert [(r["title"], r["text"]) for r in rows] == [
        ("A", "One. Two."),
        ("B", "Solo."),
        ("A", "One."),
        ("A", "Two."),
    ]


def test_grown_vectors_are_unit_copies_near_their_source() -> None:
    real = np.random.default_rng(1).normal(size=(100, 64)).astype(np.float32)
    grown = grow(real, 350)
    assert grown.shape == (350, 64)
    assert np.allclose(np.linalg.norm(grown, axis=1), 1.0, atol=1e-5)
    unit = real / np.linalg.norm(real, axis=1, keepdims=True)
    best = (grown[100:] @ unit.T).max(axis=1)
    assert 0.7 < float(np.median(best)) < 0.9  # each copy near one source, not equal to it


def test_a_measure_gives_exact_and_ivf_figures_with_full_recall_when_every_list_is_read() -> None:
    rng = np.random.default_rng(0)
    matrix = rng.normal(size=(2000, 16)).astype(np.float32)
    queries = rng.normal(size=(8, 16)).astype(np.float32)
    row = measure("tiny", matrix, queries)
    assert row["passages"] == 2000 and row["exact"]["index_bytes"] == 2000 * 16 * 4
    by = {b["nprobe"]: b for b in row["ivf"]["by_nprobe"]}
    assert row["ivf"]["nlist"] == 51
    assert by[128]["recall_at_10"] == 1.0  # nprobe >= nlist reads every list: exact
    assert all(0 <= b["recall_at_10"] <= 1 and b["one_query_s"] > 0 for b in by.values())
