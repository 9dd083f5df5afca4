r"""The action language of a search agent step: parse what the model wrote, format what it reads.

A *step* is the text of one model call. It follows Search-R1, extended by ParallelSearch::

    <think> reasoning </think>
    <search> sub-query one ## sub-query two </search>      (or)   <answer> text </answer>

Parsing rules (:func:`parse_action`):

- **Tool calls win.** If the message carries tool calls (LangChain ``AIMessage.tool_calls``), the
  text is only searched for a ``<think>``; the calls decide the action.
- **First complete action wins.** Otherwise the action is the element whose *opening* tag comes
  first among the ``<search>``, ``<answer>`` and ``<tool_call>`` tags that have a matching closing
  tag later in the text (exactly what Search-R1's ``<(search|answer)>(.*?)</\1>`` finds). If the
  same tag is opened again before it closes, the body starts after the last opening, so
  ``<search> a <search> b </search>`` searches ``b``.
- **Unclosed means invalid.** An opening tag that is never closed (``... <search> q`` at the end)
  is an invalid step, not a search: a generation cut by ``max_tokens`` also looks like that. Engines
  that strip the stop sequence from the output must put it back first
  (:func:`restore_stop_sequence`, or vLLM's ``include_stop_str_in_output=True``).
- A search with no non-empty sub-query and an empty answer are invalid; :attr:`Action.error` says
  why. The model is then shown :data:`INVALID_ACTION_OBSERVATION`, as in Search-R1.

Nothing here imports LangGraph; every function is pure and never raises on any ``str`` input.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

STOP_SEQUENCES = ("</search>", "</answer>")
DEFAULT_MAX_PARALLEL_QUERIES = 4
QUERY_SEPARATOR = "##"
INVALID_ACTION_OBSERVATION = (
    "\nMy previous action is invalid. If I want to search, I should put the query between "
    "<search> and </search>. If I want to give the final answer, I should put the answer between "
    "<answer> and </answer>. Let me try again.\n"
)

_ACTION_TAGS = ("search", "answer", "tool_call")
# Bounds of the structured-output regex (see action_regex).
_THINK_MAX_CHARS = 300
_QUERY_MAX_CHARS = 120
_ANSWER_MAX_CHARS = 80
_TOOL_NAMES = ("search", "answer")


@dataclass(frozen=True)
class Action:
    """The action of one model step.

    Attributes:
        kind: ``"search"``, ``"answer"`` or ``"invalid"``.
        queries: De-duplicated, non-empty sub-queries of a search, in the order written (not yet
            capped; see :func:`cap_queries`).
        answer: The stripped final answer of an ``"answer"`` action.
        think: The last complete ``<think>`` body before the action, stripped; ``None`` if absent
            or empty.
        raw: The step text as given.
        error: Why an ``"invalid"`` action is invalid.

    """

    kind: Literal["search", "answer", "invalid"]
    queries: tuple[str, ...] = ()
    answer: str | None = None
    think: str | None = None
    raw: str = ""
    error: str | None = None


def split_queries(body: str) -> list[str]:
    """Split a search body on ``##`` into clean, unique sub-queries.

    Whitespace runs inside a sub-query become one space and the ends are stripped; empty pieces are
    dropped; a repeat (compared case-insensitively) is dropped, keeping the first spelling.

    Args:
        body: The text between ``<search>`` and ``</search>``.

    Returns:
        The sub-queries in the order written.

    """
    return _unique(body.split(QUERY_SEPARATOR))


def cap_queries(queries: Sequence[str], max_n: int) -> tuple[list[str], list[str]]:
    """Split sub-queries into the first ``max_n`` to run and the rest to report as skipped.

    Args:
        queries: Sub-queries, e.g. from :func:`split_queries`.
        max_n: How many may run in one turn.

    Returns:
        ``(run, skipped)``.

    Raises:
        ValueError: If ``max_n`` is below 1.

    """
    if max_n < 1:
        raise ValueError(f"max_n must be at least 1 (got {max_n}); it is the sub-queries per turn.")
    return list(queries[:max_n]), list(queries[max_n:])


def parse_action(text: str, tool_calls: Sequence[Mapping[str, Any]] | None = None) -> Action:
    """Parse one model step into an :class:`Action` (rules in the module docstring).

    Args:
        text: The step text, ending with its stop sequence if generation stopped at one.
        tool_calls: LangChain tool-call dicts ``{"name", "args", "id"}``. A ``search`` call takes
            ``query_list`` (list of str) or ``query`` (str, split on ``##``); an ``answer`` call
            takes ``answer``. The first call named ``search`` or ``answer`` decides the kind; for
            a search, every ``search`` call contributes its sub-queries (parallel tool calls are a
            parallel search). Arguments may also be a JSON object string.

    Returns:
        The action; ``kind == "invalid"`` with :attr:`Action.error` set if the step has none.

    """
    if tool_calls:
        return _from_tool_calls(tool_calls, text, _last_think(text, len(text)))
    elements = _elements(text, _ACTION_TAGS)
    if not elements:
        return Action("invalid", raw=text, think=_last_think(text, len(text)), error=_why(text))
    tag, start, end = elements[0]
    think = _last_think(text, start)
    body_end = end - len(tag) - 3
    body = text[text.rfind(f"<{tag}>", start, body_end) + len(tag) + 2 : body_end]
    if tag == "tool_call":
        payload = _load_json(body)
        if not isinstance(payload, Mapping):
            return _invalid(text, think, "<tool_call> must hold a JSON object with name/arguments")
        call = {"name": payload.get("name"), "args": payload.get("arguments", payload.get("args"))}
        return _from_tool_calls([call], text, think)
    if tag == "answer":
        answer = body.strip()
        if not answer:
            return _invalid(text, think, "empty <answer></answer>")
        return Action("answer", answer=answer, think=think, raw=text)
    queries = split_queries(body)
    if not queries:
        return _invalid(text, think, "empty <search></search>: no non-empty sub-query")
    return Action("search", queries=tuple(queries), think=think, raw=text)


def restore_stop_sequence(text: str, stop_reason: object) -> str:
    """Put back the stop sequence an OpenAI-compatible server stripped from the output.

    Args:
        text: The generated text.
        stop_reason: What stopped generation (vLLM's ``stop_reason``); only a member of
            :data:`STOP_SEQUENCES` is appended, anything else (EOS, length) leaves ``text`` as is.

    Returns:
        ``text`` ending with the stop sequence when generation stopped at one.

    """
    if isinstance(stop_reason, str) and stop_reason in STOP_SEQUENCES:
        return text if text.endswith(stop_reason) else text + stop_reason
    return text


def region_spans(text: str) -> dict[str, list[tuple[int, int]]]:
    """Character spans of the functional regions of a step, for ParallelMuse uncertainty.

    - ``"reasoning"``: bodies of complete ``<think>`` elements, minus any action element inside
      them; with no complete ``<think>``, the text before the first action element (the whole text
      if there is none), whitespace-trimmed.
    - ``"exploration"``: whole ``<search>...</search>`` and ``<tool_call>...</tool_call>``
      elements, tags included. Tool calls that are not in ``text`` have no span.
    - ``"answer"``: whole ``<answer>...</answer>`` elements.

    Args:
        text: The step text (for token-level use, the raw generated text).

    Returns:
        All three keys; spans are ``(start, end)`` into ``text``, non-empty, sorted, disjoint.

    """
    actions = _elements(text, _ACTION_TAGS)
    thinks = [(s + 7, e - 8) for _, s, e in _elements(text, ("think",))]
    if thinks:
        reasoning = _subtract(thinks, [(s, e) for _, s, e in actions])
    else:
        reasoning = [_trim(text, 0, actions[0][1] if actions else len(text))]
    return {
        "reasoning": [(s, e) for s, e in reasoning if s < e],
        "exploration": [(s, e) for tag, s, e in actions if tag != "answer"],
        "answer": [(s, e) for tag, s, e in actions if tag == "answer"],
    }


def format_observation(
    results: Sequence[tuple[str, str]], skipped: Sequence[str] = (), *, limit: int | None = None
) -> str:
    r"""Format the results of one turn's sub-queries as the ``<information>`` block.

    Every sub-query gets a ``[query]`` header, even when there is only one, so the model sees one
    layout. Skipped sub-queries are named, never dropped silently.

    Args:
        results: ``(sub_query, formatted_docs)`` in the order the model wrote the sub-queries.
        skipped: Sub-queries over the per-turn limit.
        limit: The per-turn limit quoted in the note; defaults to ``len(results)``.

    Returns:
        ``"\n\n<information>[q1]\ndocs1\n...</information>\n\n"``.

    """
    lines = [f"[{query}]\n{docs.strip() or 'No results.'}\n" for query, docs in results]
    if skipped:
        cap = len(results) if limit is None else limit
        lines.append(
            f"Not searched (limit of {cap} sub-queries per turn): {' ## '.join(skipped)}\n"
        )
    return f"\n\n<information>{''.join(lines) or 'No results.'}</information>\n\n"


def action_regex(decompose: bool) -> str:
    """Build a regular expression for one valid step, for engines' structured output.

    It uses only groups, classes, alternation and bounded repeats (no lookarounds or backrefs), so
    Python ``re`` and vLLM's regex backends (xgrammar, outlines, guidance) accept it. Think text
    has no ``<`` and at most 300 characters; a sub-query (at most 120 characters) or an answer (at
    most 80) starts with a non-space character and has no ``<`` or newline; a sub-query has no
    ``#`` either. The bounds make a small model close its think and its action instead of
    rambling until ``max_tokens`` cuts the step (an invalid step). Compiling this pattern takes
    xgrammar 1-3 s on 2 cores, so :mod:`~langgraph_parallel.models.engine` raises vLLM's 5 s
    regex-compilation guard. The number of sub-queries is not limited here: :func:`cap_queries`
    reports the excess to the model.

    Args:
        decompose: Allow several sub-queries joined by ``##`` in one search (ParallelSearch);
            ``False`` allows exactly one (Search-R1).

    Returns:
        The pattern, meant for ``re.fullmatch`` on the step text.

    """
    query = f"[^ \\t\\r\\n<#][^<#\\n]{{0,{_QUERY_MAX_CHARS - 1}}}"
    queries = f"{query}(## ?{query})*" if decompose else query
    answer = f"[^ \\t\\r\\n<][^<\\n]{{0,{_ANSWER_MAX_CHARS - 1}}}"
    think = f"(<think>[^<]{{0,{_THINK_MAX_CHARS}}}</think>[ \\n]{{0,2}})?"
    return f"{think}(<search> ?{queries}</search>|<answer> ?{answer}</answer>)"


def _unique(pieces: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for piece in pieces:
        query = " ".join(piece.split())
        if query and query.casefold() not in seen:
            seen.add(query.casefold())
            out.append(query)
    return out


def _elements(text: str, tags: Sequence[str]) -> list[tuple[str, int, int]]:
    """Complete ``<tag>...</tag>`` elements as ``(tag, start, end)``, left to right, disjoint."""
    found: list[tuple[str, int, int]] = []
    next_open = {tag: text.find(f"<{tag}>") for tag in tags}
    while True:
        live = [(pos, tag) for tag, pos in next_open.items() if pos >= 0]
        if not live:
            return found
        start, tag = min(live)
        close = text.find(f"</{tag}>", start + len(tag) + 2)
        if close < 0:
            # No later opening of this tag can be closed either; forgetting it keeps this linear.
            next_open[tag] = -1
            continue
        end = close + len(tag) + 3
        found.append((tag, start, end))
        for other, pos in next_open.items():
            if 0 <= pos < end:
                next_open[other] = text.find(f"<{other}>", end)


def _last_think(text: str, limit: int) -> str | None:
    thinks = _elements(text[:limit], ("think",))
    if not thinks:
        return None
    _, start, end = thinks[-1]
    body = text[text.rfind("<think>", start, end - 8) + 7 : end - 8].strip()
    return body or None


def _why(text: str) -> str:
    for tag in _ACTION_TAGS:
        if f"<{tag}>" in text:
            return f"<{tag}> is never closed: the step must end with </{tag}>"
    return "no <search>...</search> or <answer>...</answer> in the step"


def _invalid(text: str, think: str | None, error: str) -> Action:
    return Action("invalid", think=think, raw=text, error=error)


def _from_tool_calls(calls: Sequence[object], text: str, think: str | None) -> Action:
    known = [c for c in calls if isinstance(c, Mapping) and c.get("name") in _TOOL_NAMES]
    if not known:
        names = [c.get("name") if isinstance(c, Mapping) else c for c in calls]
        return _invalid(text, think, f"unknown tool call(s) {names!r}; use `search` or `answer`")
    if known[0]["name"] == "answer":
        answer, error = _answer_arg(known[0].get("args"))
        if error:
            return _invalid(text, think, error)
        return Action("answer", answer=answer, think=think, raw=text)
    pieces: list[str] = []
    for call in known:
        if call["name"] == "search":
            found, error = _query_args(call.get("args"))
            if error:
                return _invalid(text, think, error)
            pieces.extend(found)
    return Action("search", queries=tuple(_unique(pieces)), think=think, raw=text)


def _arguments(args: object) -> Mapping[str, Any] | None:
    # OpenAI-style raw arguments arrive as a JSON string rather than a dict.
    value = _load_json(args) if isinstance(args, str) else args
    return value if isinstance(value, Mapping) else None


def _query_args(args: object) -> tuple[list[str], str | None]:
    mapping = _arguments(args)
    if mapping is None:
        return [], "search tool call needs an object of arguments with `query_list`"
    if "query_list" in mapping:
        value = mapping["query_list"]
        if not isinstance(value, (list, tuple)) or not all(isinstance(q, str) for q in value):
            return [], "search tool call: `query_list` must be a list of strings"
        pieces = [piece for query in value for piece in query.split(QUERY_SEPARATOR)]
    elif "query" in mapping:
        if not isinstance(mapping["query"], str):
            return [], "search tool call: `query` must be a string"
        pieces = mapping["query"].split(QUERY_SEPARATOR)
    else:
        return [], "search tool call needs `query_list` (list of str) or `query` (str)"
    queries = _unique(pieces)
    return queries, None if queries else "search tool call has no non-empty query"


def _answer_arg(args: object) -> tuple[str, str | None]:
    mapping = _arguments(args)
    value = None if mapping is None else mapping.get("answer")
    # Models emitting JSON may answer a year or a count as a bare number; huge ints are nonsense
    # and str() of them can raise, so they are refused.
    if isinstance(value, float) or (
        isinstance(value, int) and not isinstance(value, bool) and value.bit_length() < 64
    ):
        value = str(value)
    if not isinstance(value, str):
        return "", "answer tool call needs a string `answer` argument"
    answer = value.strip()
    return answer, None if answer else "answer tool call has an empty `answer`"


def _load_json(raw: str) -> object:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    segment = text[start:end]
    return start + len(segment) - len(segment.lstrip()), end - len(segment) + len(segment.rstrip())


def _subtract(spans: list[tuple[int, int]], holes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Parts of sorted disjoint ``spans`` outside sorted disjoint ``holes``, in one sweep."""
    out: list[tuple[int, int]] = []
    first = 0
    for start, end in spans:
        while first < len(holes) and holes[first][1] <= start:
            first += 1
        cursor = start
        index = first
        while index < len(holes) and holes[index][0] < end:
            out.append((cursor, holes[index][0]))
            cursor = max(cursor, holes[index][1])
            index += 1
        out.append((cursor, end))
    return [(s, e) for s, e in out if s < e]
