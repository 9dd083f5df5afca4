"""MkDocs hooks (`hooks:` in mkdocs.yml): committed benchmark files the docs pages link to.

The pages under docs/ link to a few files outside it (a benchmark report and its plots) with
paths relative to the page, `../benchmarks/...` from docs/results.md, so the links also work
when the Markdown is read on GitHub. MkDocs only publishes files under docs/, so `on_files` adds
these files to the site under their repository path and `on_page_markdown` points the links at
that copy. Any other link out of docs/ still fails `mkdocs build --strict`.

The plots are not committed: `on_files` first draws them from the committed data of their
folder, as `langgraph-parallel results --draw` does, so the site shows today's files' figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

REPO = Path(__file__).resolve().parents[1]
REPO_FILES = (
    "benchmarks/hotpotqa200/report.md",
    "benchmarks/hotpotqa200/em_vs_tokens.png",
    "benchmarks/hotpotqa200/calls_turns_by_class.png",
)
"""Files outside docs/ that pages may link to, relative to the repository root."""


def on_files(files: Files, *, config: Any) -> Files:
    """Draw the plots, then add the repository files the results page links to the site."""
    from lab.drawings import draw_folder

    for folder in sorted({(REPO / path).parent for path in REPO_FILES if path.endswith(".png")}):
        draw_folder(folder)
    for path in REPO_FILES:
        files.append(File.generated(config, path, abs_src_path=str(REPO / path)))
    return files


def on_page_markdown(markdown: str, *, page: Page, config: Any, files: Files) -> str:
    """Point the page's links to those repository files at their copies in the site."""
    depth = page.file.src_uri.count("/")
    to_repo, to_site = "../" * (depth + 1), "../" * depth
    for path in REPO_FILES:
        markdown = markdown.replace(f"]({to_repo}{path})", f"]({to_site}{path})")
    return markdown
