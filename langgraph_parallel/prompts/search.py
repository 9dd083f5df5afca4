"""Prompts of the search agent (ParallelSearch / Search-R1) and of the closed-book baseline.

The names and what they are: the package docstring, :mod:`langgraph_parallel.prompts`.
"""

from __future__ import annotations

from typing import Literal

from langgraph_parallel.protocol import format_observation

SEARCH_R1_INSTRUCTION = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every "
    "time you get new information. After reasoning, if you find you lack some knowledge, you can "
    "call a search engine by <search> query </search> and it will return the top searched results "
    "between <information> and </information>. You can search as many times as your want. If you "
    "find no further external knowledge needed, you can directly provide the answer inside "
    "<answer> and </answer>, without detailed illustrations. For example, "
    "<answer> Beijing </answer>. Question: {question}\n"
)
_QUESTION_LINE = "Question: {question}\n"

PARALLEL_DECOMPOSITION_SENTENCE = (
    "If the question has parts that do not depend on each other, you can search for them together "
    "by writing several sub-queries in one search, separated by ##, for example <search> query one "
    "## query two </search>; they are searched in parallel and the results for each sub-query come "
    "back under its own heading. Search one thing at a time when a query needs an earlier result."
)


def parallel_search_instruction(decompose: bool) -> str:
    """Return the ParallelSearch instruction template (placeholder ``{question}``).

    Args:
        decompose: Add :data:`PARALLEL_DECOMPOSITION_SENTENCE`; ``False`` gives
            :data:`SEARCH_R1_INSTRUCTION` unchanged, the sequential baseline.

    Returns:
        The template, to fill with ``.format(question=...)``.

    """
    if not decompose:
        return SEARCH_R1_INSTRUCTION
    rules = SEARCH_R1_INSTRUCTION.removesuffix(_QUESTION_LINE)
    return f"{rules}{PARALLEL_DECOMPOSITION_SENTENCE} {_QUESTION_LINE}"


FEW_SHOT_RULES = (
    "Answer each question. Think inside <think> </think>. To look something up, write "
    "<search> query </search>; results come back inside <information> </information>. Give the "
    "final answer in a few words inside <answer> </answer>.\n"
)
FEW_SHOT_DECOMPOSITION_RULE = (
    "Independent parts of a question can be searched together: <search> query one ## query two "
    "</search>.\n"
)

# Demo facts are real and easy to check; none of the questions is a HotpotQA dev question.
_CURIE = "Doc 1(Title: Marie Curie) Marie Curie (born 7 November 1867) was a Polish physicist."
_EINSTEIN = (
    "Doc 1(Title: Albert Einstein) Albert Einstein (born 14 March 1879) was a German-born "
    "physicist."
)
_SPIRITED = (
    "Doc 1(Title: Spirited Away) Spirited Away is a 2001 Japanese film directed by Hayao Miyazaki."
)
_MIYAZAKI = (
    "Doc 1(Title: Hayao Miyazaki) Hayao Miyazaki (born 5 January 1941 in Tokyo, Japan) is an "
    "animator."
)
_CANBERRA = "Doc 1(Title: Canberra) Canberra is the capital city of Australia."

_Q_BORN = "Question: Who was born first, Marie Curie or Albert Einstein?\n"
_Q_DIRECTOR = "Question: In which country was the director of the film Spirited Away born?\n"
_Q_CAPITAL = "Question: What is the capital city of Australia?\n"


def _search(query: str, docs: str) -> str:
    return f"<search> {query} </search>" + format_observation([(query, docs)])


_BRIDGE_DEMO = (
    f"{_Q_DIRECTOR}<think> First I need the director, then his birthplace. </think>\n"
    + _search("Spirited Away director", _SPIRITED)
    + "<think> It is Hayao Miyazaki. Now his birthplace. </think>\n"
    + _search("Hayao Miyazaki birthplace", _MIYAZAKI)
    + "<think> He was born in Tokyo, Japan. </think>\n<answer> Japan </answer>"
)
_DIRECT_DEMO = (
    f"{_Q_CAPITAL}<think> One search is enough. </think>\n"
    + _search("capital city of Australia", _CANBERRA)
    + "<think> The capital is Canberra. </think>\n<answer> Canberra </answer>"
)
_ANSWER_BORN = (
    "<think> Curie was born in 1867, Einstein in 1879. </think>\n<answer> Marie Curie </answer>"
)

FEW_SHOT_PARALLEL = "\n\n".join(
    [
        f"{_Q_BORN}<think> I need both birth dates; they are independent. </think>\n"
        "<search> Marie Curie birth date ## Albert Einstein birth date </search>"
        + format_observation(
            [("Marie Curie birth date", _CURIE), ("Albert Einstein birth date", _EINSTEIN)]
        )
        + _ANSWER_BORN,
        _BRIDGE_DEMO,
        _DIRECT_DEMO,
    ]
)
FEW_SHOT_SEQUENTIAL = "\n\n".join(
    [
        f"{_Q_BORN}<think> I need both birth dates. First Marie Curie. </think>\n"
        + _search("Marie Curie birth date", _CURIE)
        + "<think> Now Albert Einstein. </think>\n"
        + _search("Albert Einstein birth date", _EINSTEIN)
        + _ANSWER_BORN,
        _BRIDGE_DEMO,
        _DIRECT_DEMO,
    ]
)


def few_shot_prompt(question: str, decompose: bool) -> str:
    r"""Build a raw-completion prompt: rules, three worked examples, then the question.

    The prompt ends with ``"Question: {question}\n"``; in every demo the next line opens with
    ``<think>``, so the model's step starts with its own ``<think>`` tag, as
    :func:`~langgraph_parallel.protocol.parse_action` and ``action_regex`` expect. Later turns
    append the step (with its stop sequence) and the ``format_observation`` output verbatim.

    Args:
        question: The question; surrounding whitespace is stripped.
        decompose: Use the ``##`` demos and rule (ParallelSearch) or the one-query ones.

    Returns:
        The prompt text.

    """
    rules = FEW_SHOT_RULES + (FEW_SHOT_DECOMPOSITION_RULE if decompose else "")
    demos = FEW_SHOT_PARALLEL if decompose else FEW_SHOT_SEQUENTIAL
    # Concatenation, not str.format: the question may contain braces.
    return f"{rules}\n{demos}\n\nQuestion: " + question.strip() + "\n"


RawPrompt = Literal["few_shot", "rules"]
"""Which raw-completion prompt a model gets: demos (``few_shot``) or the rules alone."""


def rules_prompt(question: str, decompose: bool) -> str:
    r"""Build the short raw-completion prompt of trained policies: the rules, then the question.

    The same preamble as :func:`few_shot_prompt` without the worked examples, so a fine-tuned
    model prefills about 600 fewer tokens per question. Ends with ``"Question: {question}\n"``.

    Args:
        question: The question; surrounding whitespace is stripped.
        decompose: Include the ``##`` rule (ParallelSearch) or not (Search-R1).

    Returns:
        The prompt text.
    """
    rules = FEW_SHOT_RULES + (FEW_SHOT_DECOMPOSITION_RULE if decompose else "")
    return f"{rules}\nQuestion: " + question.strip() + "\n"


def raw_prompt(question: str, decompose: bool, kind: RawPrompt = "few_shot") -> str:
    """Return :func:`few_shot_prompt` or :func:`rules_prompt` for ``kind``."""
    if kind == "rules":
        return rules_prompt(question, decompose)
    return few_shot_prompt(question, decompose)


def opening_prompt(
    question: str,
    style: Literal["chat", "raw"],
    decompose: bool,
    kind: RawPrompt = "few_shot",
    instruction: str | None = None,
) -> str:
    """Return the first prompt of a search agent's transcript for ``question``.

    The one rule both ways in use: the graphs' first step
    (:func:`~langgraph_parallel.agent.step.first_prompt`) and a tool-calling policy rendering a
    ``create_agent`` conversation (:mod:`~langgraph_parallel.dialect.tool_calls`).

    Args:
        question: The question, already cleaned.
        style: ``raw`` (a completion prompt, :func:`raw_prompt`) or ``chat`` (the instruction).
        decompose: ParallelSearch (``##`` sub-queries) or the one-query Search-R1 prompt.
        kind: Which raw prompt (``few_shot`` demos or the ``rules`` of trained policies).
        instruction: Chat-style template with ``{question}``; ``None``:
            :func:`parallel_search_instruction`.
    """
    if style == "raw":
        return raw_prompt(question, decompose, kind)
    template = instruction or parallel_search_instruction(decompose)
    return template.replace("{question}", question)


def next_question_prompt(question: str) -> str:
    r"""Return a raw transcript's next question: ``"\n\nQuestion: {question}\n"``.

    A later question of a conversation continues the document the way the few-shot demos follow
    each other: a blank line, then the question line that every first prompt ends with.
    """
    return "\n\nQuestion: " + question.strip() + "\n"


SEARCH_CALL_ERROR = (
    "Search not run: {error}. Call `{tool}` again with `query_list`, a list of one or more "
    'search strings, for example {{"query_list": ["first query", "second query"]}}.'
)
"""What the ParallelSearch tool answers a malformed call. Placeholders ``{error}``, ``{tool}``
(the doubled braces are the example's literal JSON braces)."""

PARALLEL_SEARCH_TOOL_INSTRUCTION = (
    "When a question has parts that do not depend on each other, search for them together: "
    "call the `{tool}` tool once with every independent part as its own entry of `query_list` "
    "(at most {max_parallel_queries}); they are searched in parallel and each one's results "
    "come back under its own [query] heading. Search one thing at a time when a query needs an "
    "earlier result."
)
"""The decomposition instruction ``ParallelSearchMiddleware`` adds to a chat model's system
prompt. Placeholders ``{tool}`` and ``{max_parallel_queries}`` (the search tool's cap)."""


# Direct baseline (no retrieval): one model call that answers from the model's own knowledge.
# DIRECT_FEW_SHOT reuses the demo questions above, answered without searching; the raw prompt is
# DIRECT_FEW_SHOT + "Question: ...\n". DIRECT_INSTRUCTION is the chat-style template, placeholder
# ``{question}`` (filled by replacement, so a question with braces is safe).
DIRECT_FEW_SHOT = (
    "Answer each question in a few words inside <answer> </answer>.\n\n"
    f"{_Q_BORN}<answer> Marie Curie </answer>\n\n"
    f"{_Q_DIRECTOR}<answer> Japan </answer>\n\n"
    f"{_Q_CAPITAL}<answer> Canberra </answer>\n\n"
)
DIRECT_INSTRUCTION = (
    "Answer the given question from your own knowledge. Give only the final answer, in as few "
    "words as possible and without explanation, inside <answer> and </answer>. For example, "
    "<answer> Beijing </answer>. Question: {question}\n"
)
