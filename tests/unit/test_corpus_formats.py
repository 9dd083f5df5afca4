"""Your own corpus: text-only JSONL rows, folders of .txt/.md files, fingerprints, errors."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import pytest

from langgraph_parallel.errors import UserError
from langgraph_parallel.retrieval import CorpusIndex, Passage, format_passages
from langgraph_parallel.retrieval.corpus import (
    CORPUS_FORMAT,
    corpus_sha256,
    corpus_version,
    load_corpus,
)
from tests.unit.test_retrieval import HashedBagOfWords


def folder_corpus(root: Path) -> Path:
    docs = root / "docs"
    (docs / "rivers").mkdir(parents=True)
    (docs / ".git").mkdir()
    (docs / "rivers" / "nile.md").write_text("# The Nile\n\nThe Nile flows north into Egypt.\n")
    (docs / "rivers" / "amazon.txt").write_text("The Amazon carries the most water.\n")
    (docs / "notes.md").write_text("No heading here, only a note about deserts.")
    (docs / "blank.txt").write_text("  \n")
    (docs / "image.png").write_bytes(b"\x89PNG")  # not a document: ignored
    (docs / ".hidden.txt").write_text("secret")
    (docs / ".git" / "HEAD.txt").write_text("ref")
    return docs


def test_jsonl_rows_need_only_text(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"text": "Rivers flow downhill."}) + "\n")
        fh.write(json.dumps({"id": "b", "text": "Deserts are dry.", "title": "Desert"}) + "\n")
    passages = load_corpus(path)
    assert passages == [
        Passage("line-1", "", "Rivers flow downhill."),
        Passage("b", "Desert", "Deserts are dry."),
    ]
    assert format_passages(passages) == (
        "Doc 1 Rivers flow downhill.\nDoc 2(Title: Desert) Deserts are dry."
    )


def test_a_folder_is_one_document_per_text_file(tmp_path: Path) -> None:
    docs = folder_corpus(tmp_path)
    assert load_corpus(docs) == [
        Passage("notes.md", "notes", "No heading here, only a note about deserts."),
        Passage("rivers/amazon.txt", "amazon", "The Amazon carries the most water."),
        Passage("rivers/nile.md", "The Nile", "The Nile flows north into Egypt."),
    ]
    assert [p.id for p in load_corpus(docs, limit=2)] == ["notes.md", "rivers/amazon.txt"]


def test_a_folder_fingerprint_follows_its_documents(tmp_path: Path) -> None:
    docs = folder_corpus(tmp_path)
    first, version = corpus_sha256(docs), corpus_version(docs)
    assert corpus_sha256(docs) == first
    (docs / "image.png").write_bytes(b"other")  # not a document
    assert corpus_sha256(docs) == first
    nile = docs / "rivers" / "nile.md"
    nile.write_text("# The Nile\n\nThe Nile is long.\n")
    os.utime(nile, (version[0] + 10, version[0] + 10))
    edited = corpus_sha256(docs)
    assert edited != first and corpus_version(docs) != version
    nile.rename(docs / "rivers" / "nile2.md")
    assert corpus_sha256(docs) not in (first, edited)
    assert corpus_version(tmp_path / "missing") == (0.0, -1)


def test_dense_index_over_a_folder_is_cached_and_rebuilt_on_edit(tmp_path: Path) -> None:
    docs, cache = folder_corpus(tmp_path), tmp_path / "cache"
    encoder = HashedBagOfWords()
    index = CorpusIndex.build(docs, encoder, cache_dir=cache)
    assert index.search("Which river flows into Egypt?", k=1)[0].id == "rivers/nile.md"
    again = HashedBagOfWords()
    CorpusIndex.build(docs, again, cache_dir=cache)
    assert again.calls == 0  # served from the cached matrix
    (docs / "rivers" / "amazon.txt").write_text("The Amazon ends in the Atlantic ocean.\n")
    edited = HashedBagOfWords()
    index = CorpusIndex.build(docs, edited, cache_dir=cache)
    assert edited.calls == 1
    assert index.search("Atlantic ocean", k=1)[0].id == "rivers/amazon.txt"


def test_bm25_index_over_a_folder(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    from langgraph_parallel.retrieval.lexical import BM25Index

    index = BM25Index.build(folder_corpus(tmp_path), cache_dir=tmp_path / "cache")
    assert [p.title for p in index.batch_search(["Egypt", "deserts"], k=1)[0]] == ["The Nile"]
    assert index.batch_search(["deserts"], k=1)[0][0].id == "notes.md"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: (p / "empty").mkdir() or p / "empty", "has no .txt or .md file"),
        (
            lambda p: (p / "d").mkdir() or (p / "d" / "a.txt").write_text(" ") and p / "d",
            "is blank",
        ),
        (
            lambda p: (
                (p / "d").mkdir() or (p / "d" / "a.txt").write_bytes(b"\xff\xfe\x00x") and p / "d"
            ),
            "a.txt is not UTF-8 text",
        ),
        (
            lambda p: (p / "c.jsonl").write_text('{"title": "T"}\n') and p / "c.jsonl",
            "line 1: field 'text' is missing",
        ),
        (
            lambda p: (p / "c.jsonl").write_text('{"text": 3}\n') and p / "c.jsonl",
            "field 'text' must be a string",
        ),
        (lambda p: (p / "c.jsonl").write_text("[1]\n") and p / "c.jsonl", "must be a JSON object"),
        (lambda p: (p / "c.jsonl.gz").write_text("{}") and p / "c.jsonl.gz", "Cannot read corpus"),
        (lambda p: p / "nope.jsonl", "not found"),
    ],
)
def test_bad_corpora_name_the_problem_and_the_documented_format(tmp_path, make, message) -> None:
    with pytest.raises(UserError) as info:
        load_corpus(make(tmp_path))
    text = str(info.value)
    assert message in text
    if "UTF-8" in message:  # the fix is about the file, not the format
        assert "save it as UTF-8 or move it out of" in text
    else:
        assert CORPUS_FORMAT in text and "docs/guides/corpus.md" in text
