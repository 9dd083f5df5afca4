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
Modules: :mod:`.action` (tags, :class:`Action`), :mod:`.parse` (steps), :mod:`.tool_calls`
(tool-call arguments), :mod:`.observe` (what the model reads back), :mod:`.grammar` (the
structured-output regex).
"""

from langgraph_parallel.protocol.action import (
    DEFAULT_MAX_PARALLEL_QUERIES,
    QUERY_SEPARATOR,
    STOP_SEQUENCES,
    Action,
)
from langgraph_parallel.protocol.grammar import THINK_MAX_CHARS, action_regex, answer_regex
from langgraph_parallel.protocol.observe import (
    INVALID_ACTION_OBSERVATION,
    format_observation,
    skipped_note,
)
from langgraph_parallel.protocol.parse import (
    cap_queries,
    format_step,
    parse_action,
    restore_stop_sequence,
    split_queries,
)
from langgraph_parallel.protocol.tool_calls import search_queries

__all__ = [
    "DEFAULT_MAX_PARALLEL_QUERIES",
    "INVALID_ACTION_OBSERVATION",
    "QUERY_SEPARATOR",
    "STOP_SEQUENCES",
    "Action",
    "THINK_MAX_CHARS",
    "action_regex",
    "answer_regex",
    "cap_queries",
    "format_observation",
    "format_step",
    "parse_action",
    "restore_stop_sequence",
    "search_queries",
    "skipped_note",
    "split_queries",
]
