"""Every prompt the agents use, as named constants (``Context`` fields default to these).

Templates are filled with :meth:`str.format`; their placeholders are listed here and nowhere else
do they contain braces.

ParallelSearch / Search-R1 (chat-style, one user message):

- :data:`SEARCH_R1_INSTRUCTION` -- the Search-R1 template, verbatim (typos included, as the models
  trained on it saw it). Placeholder ``{question}``.
- :data:`PARALLEL_DECOMPOSITION_SENTENCE` -- the ParallelSearch addition: independent parts may go
  into one search as ``##``-separated sub-queries that run in parallel. No placeholder.
- :func:`parallel_search_instruction` -- the two composed; ``decompose=False`` is plain Search-R1.

Few-shot raw completion (small base/instruct models follow the protocol far better this way than
through a chat template):

- :data:`FEW_SHOT_RULES`, :data:`FEW_SHOT_DECOMPOSITION_RULE` -- a two-line preamble.
- :data:`FEW_SHOT_PARALLEL` / :data:`FEW_SHOT_SEQUENTIAL` -- three short worked examples (a
  comparison, a bridge question, a one-hop question) with and without ``##`` decomposition. The
  ``<information>`` blocks are built by :func:`~langgraph_parallel.protocol.format_observation`,
  so later turns, which append the model's step and that function's output verbatim, look exactly
  like the demos.
- :func:`few_shot_prompt` -- preamble + demos + the question.
- :func:`rules_prompt` -- preamble + the question, no demos: the short prompt of the trained
  policies (``smollm2-parallel``, ``smollm2-sequential``), which learned the protocol from
  fine-tuning instead of from demos. :func:`raw_prompt` picks one of the two by name.

ParallelMuse:

- :data:`MUSE_AGENT_INSTRUCTION` -- system message of the think -> tool call -> observation agent
  that has a ``search`` tool. No placeholder.
- :data:`SEARCH_TOOL_DESCRIPTION` -- the ``search`` tool's description. No placeholder.
- :data:`REPORT_PROMPT` -- compresses one trajectory into a report with Solution Planning, Solution
  Methods and Final Reasoning sections and a final ``Answer:`` line. Placeholders ``{question}``,
  ``{trajectory}``.
- :data:`REPORT_FOLLOWUP_PROMPT` -- the same request as a turn after the trajectory's own messages
  (``report_style="continue"``: the prompt extends the agent's last one, prefix-cached).
- :data:`ANALYST_PROMPT` -- picks the best-supported of N numbered reports and copies its answer
  (``<choice>k</choice>``, ``<answer>...</answer>``), never merging answers. Placeholders
  ``{question}``, ``{n}``, ``{reports}``.
"""

from langgraph_parallel.prompts.muse import (
    ANALYST_PROMPT,
    ANALYST_RAW_PRIMER,
    MUSE_AGENT_INSTRUCTION,
    REPORT_FOLLOWUP_PROMPT,
    REPORT_PROMPT,
    REPORT_RAW_PRIMER,
    SEARCH_TOOL_DESCRIPTION,
)
from langgraph_parallel.prompts.search import (
    DIRECT_FEW_SHOT,
    DIRECT_INSTRUCTION,
    FEW_SHOT_DECOMPOSITION_RULE,
    FEW_SHOT_PARALLEL,
    FEW_SHOT_RULES,
    FEW_SHOT_SEQUENTIAL,
    PARALLEL_DECOMPOSITION_SENTENCE,
    PARALLEL_SEARCH_TOOL_INSTRUCTION,
    SEARCH_CALL_ERROR,
    SEARCH_R1_INSTRUCTION,
    RawPrompt,
    few_shot_prompt,
    next_question_prompt,
    opening_prompt,
    parallel_search_instruction,
    raw_prompt,
    rules_prompt,
)

__all__ = [
    "ANALYST_PROMPT",
    "ANALYST_RAW_PRIMER",
    "DIRECT_FEW_SHOT",
    "DIRECT_INSTRUCTION",
    "FEW_SHOT_DECOMPOSITION_RULE",
    "FEW_SHOT_PARALLEL",
    "FEW_SHOT_RULES",
    "FEW_SHOT_SEQUENTIAL",
    "MUSE_AGENT_INSTRUCTION",
    "PARALLEL_DECOMPOSITION_SENTENCE",
    "PARALLEL_SEARCH_TOOL_INSTRUCTION",
    "REPORT_FOLLOWUP_PROMPT",
    "REPORT_PROMPT",
    "REPORT_RAW_PRIMER",
    "RawPrompt",
    "SEARCH_CALL_ERROR",
    "SEARCH_R1_INSTRUCTION",
    "SEARCH_TOOL_DESCRIPTION",
    "few_shot_prompt",
    "next_question_prompt",
    "opening_prompt",
    "parallel_search_instruction",
    "raw_prompt",
    "rules_prompt",
]
