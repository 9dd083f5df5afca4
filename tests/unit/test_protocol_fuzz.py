from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from langgraph_parallel.parallel_muse.regions import region_spans
from langgraph_parallel.protocol import (
    action_regex,
    cap_queries,
    format_observation,
    parse_action,
    split_queries,
)
from langgraph_parallel.protocol.observe import inert

FRAGMENTS = [
    "<search>",
    "</search>",
    "<answer>",
    "</answer>",
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "<information>",
    "</information>",
    "##",
    "#",
    " ## ",
    "<",
    ">",
    "</",
    "<search",
    "search>",
    " ",
    "\n",
    "\t",
    "\u3000",
    "q",
    "Paris",
    "é",
    '{"name": "search", "arguments": {"query_list": ["a", "b ## c"]}}',
    '{"name": "answer", "arguments": {"answer": "x"}}',
    '{"name": "search", "arguments": {"query": 3}}',
    "[[[[",
]

fragment = st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4))
tagged_text = st.lists(fragment, max_size=40).map("".join)
any_text = st.one_of(st.text(), tagged_text)

json_scalar = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8), tagged_text
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
search_args = st.one_of(
    st.fixed_dictionaries({"query_list": st.one_of(st.lists(any_text, max_size=6), json_value)}),
    st.fixed_dictionaries({"query": st.one_of(any_text, json_value)}),
)
answer_args = st.fixed_dictionaries({"answer": st.one_of(any_text, json_value)})
tool_call = st.one_of(
    st.fixed_dictionaries(
        {
            "name": st.one_of(st.sampled_from(["search", "answer", "other"]), json_value),
            "args": st.one_of(search_args, answer_args, json_value),
            "id": st.text(max_size=4),
        }
    ),
    st.dictionaries(st.sampled_from(["name", "args", "id", "type"]), json_value, max_size=4),
    json_value,
)
tool_calls = st.one_of(st.none(), st.lists(tool_call, max_size=4))


def _check_action(text: str, calls: Any) -> None:
    action = parse_action(text, calls)
    assert action.kind in ("search", "answer", "invalid")
    assert action.raw == text
    if action.kind == "search":
        assert len(action.queries) >= 1
        keys = [q.casefold() for q in action.queries]
        assert len(set(keys)) == len(keys)
        for query in action.queries:
            assert query
            assert query == query.strip()
            assert "##" not in query
        assert action.answer is None
        assert action.error is None
    elif action.kind == "answer":
        assert isinstance(action.answer, str)
        assert action.answer
        assert action.answer == action.answer.strip()
        assert action.queries == ()
        assert action.error is None
    else:
        assert isinstance(action.error, str)
        assert action.error
        assert action.queries == ()
        assert action.answer is None
    assert action.think is None or (action.think and action.think == action.think.strip())


@settings(max_examples=1000, deadline=None)
@given(any_text)
def test_parse_text_never_raises(text: str) -> None:
    _check_action(text, None)


@settings(max_examples=1000, deadline=None)
@given(any_text, tool_calls)
def test_parse_tool_calls_never_raises(text: str, calls: Any) -> None:
    _check_action(text, calls)


@settings(max_examples=1000, deadline=None)
@given(any_text)
def test_region_spans_in_bounds_and_disjoint(text: str) -> None:
    regions = region_spans(text)
    assert set(regions) == {"reasoning", "exploration", "answer"}
    spans = sorted(span for found in regions.values() for span in found)
    for start, end in spans:
        assert 0 <= start < end <= len(text)
    for (_, end), (start, _) in zip(spans, spans[1:], strict=False):
        assert end <= start
    for found in regions.values():
        assert found == sorted(found)


@settings(max_examples=1000, deadline=None)
@given(any_text)
def test_split_queries_invariants(body: str) -> None:
    queries = split_queries(body)
    assert all(q and q == q.strip() and "##" not in q for q in queries)
    assert len({q.casefold() for q in queries}) == len(queries)
    assert split_queries(" ## ".join(queries)) == queries


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=10), max_size=12), st.integers(1, 6))
def test_cap_and_observation_name_every_query(queries: list[str], max_n: int) -> None:
    queries = split_queries(" ## ".join(queries))
    run, skipped = cap_queries(queries, max_n)
    assert run + skipped == queries
    assert len(run) == min(max_n, len(queries))
    text = format_observation([(q, "docs") for q in run], skipped, limit=max_n)
    assert text.startswith("\n\n<information>")
    assert text.endswith("</information>\n\n")
    # One block whatever the queries hold: protocol tags in them are made inert.
    assert text.count("<information>") == 1 and text.count("</information>") == 1
    for query in queries:
        assert inert(query) in text


PRINTABLE = "".join(chr(c) for c in range(32, 127)) + "\n"


@settings(max_examples=1000, deadline=None)
@given(st.booleans(), st.data())
def test_regex_matches_always_parse_as_valid(decompose: bool, data: st.DataObject) -> None:
    step = data.draw(st.from_regex(action_regex(decompose), fullmatch=True, alphabet=PRINTABLE))
    action = parse_action(step)
    assert action.kind in ("search", "answer"), (step, action.error)
    if not decompose:
        assert len(action.queries) <= 1
