"""Prompts of ParallelMuse: the tool-calling agent, the trajectory report and the analyst.

The names and what they are: the package docstring, :mod:`langgraph_parallel.prompts`.
"""

from __future__ import annotations

MUSE_AGENT_INSTRUCTION = (
    "You are a research agent that answers questions by searching. Work in steps. In each step, "
    "first think inside <think> and </think> about what you already know and what is still "
    "missing, then either call the `search` tool or give the final answer. The `search` tool takes "
    "`query_list`, a list of queries; queries that do not depend on each other can go in one call "
    "and run in parallel. Its results come back as an observation: read them before the next "
    "step. Search again when a fact is missing or sources disagree. When the evidence is enough, "
    "give the final answer inside <answer> and </answer>, in as few words as possible, without "
    "explanation."
)

SEARCH_TOOL_DESCRIPTION = (
    "Search for documents. `query_list` is a list of search queries; each is run independently "
    "and its top results are returned under its own [query] heading."
)

_REPORT_SECTIONS = """\
## Solution Planning
How the agent broke the question down and in what order it looked for the pieces.

## Solution Methods
The searches that mattered and the facts each one established, one bullet per fact, naming the \
source title when known. Leave out raw tool output, dead ends and anything the answer does not \
need.

## Final Reasoning
How the established facts lead to the answer, in a few sentences. Say plainly where a step is a \
guess or the sources disagree.

Then end with one line: "Answer: " followed by the agent's final answer, copied exactly. If the \
agent gave no final answer, write "Answer: unknown".
"""

REPORT_PROMPT = (
    "Below are a question and the full trajectory of an agent that searched to answer it. "
    "Compress the trajectory into a short report in Markdown with exactly these three sections:"
    "\n\n" + _REPORT_SECTIONS + "\nQuestion: {question}\n\nTrajectory:\n{trajectory}\n"
)

# report_style="continue": the turn after the trajectory's own messages, so the prompt extends
# the agent's last one and the engine's prefix cache holds everything before it.
REPORT_FOLLOWUP_PROMPT = (
    "Stop searching. You are the agent above. Compress your work above into a short report in "
    "Markdown with exactly these three sections:\n\n" + _REPORT_SECTIONS
)

ANALYST_PROMPT = """\
Below are a question and {n} numbered reports, each written from an independent attempt to \
answer it. Decide which report's answer is best supported: prefer facts established by searches \
over guesses, consistent reasoning over contradictions, and an answer that several reports reach \
independently. Do not merge answers or write a new one; copy the chosen report's answer exactly.

Compare the reports briefly, then reply with
<choice>k</choice>
<answer>the chosen report's answer</answer>
where k is the number of the chosen report, from 1 to {n}.

Question: {question}

Reports:
{reports}
"""


# ParallelMuse, raw-completion models: appended after REPORT_PROMPT / ANALYST_PROMPT so that a
# model continuing the document writes the report (its first heading is already given) or the
# choice, instead of continuing the trajectory. Chat models get the prompts alone.
REPORT_RAW_PRIMER = "\nReport:\n\n## Solution Planning\n"
ANALYST_RAW_PRIMER = "\nReply:\n"
