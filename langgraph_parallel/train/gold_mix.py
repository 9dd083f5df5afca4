"""Gold mixing for GRPO (``train grpo --gold-mix``): a gold trajectory where no rollout decomposed.

GRPO learns only from differences inside a group: if no rollout of a parallelizable question
decomposes its first search, the decomposition term is equal (zero) across the group and
teaches nothing. Mixing replaces the group's last rollout by the question's gold trajectory,
recorded as ``train sft`` records them (:mod:`.synth`: scripted teacher, the real graph, the
same prompt bytes). Its tokens were not sampled from the policy, so it is an off-policy sample
weighted by its advantage (like LUFFY-style guidance); rollouts carry a ``gold`` flag and the
logged rollout metrics leave mixed rows out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from langgraph_parallel.errors import UserError
from langgraph_parallel.protocol import parse_action
from langgraph_parallel.rewards import first_search_decomposed

__all__ = ["Encoded", "gold_transcripts", "mix_gold"]

Encoded = tuple[list[int], list[int], list[str]]
"""``(completion_ids, env_mask, steps)`` of one transcript (:func:`~.rollout.completion_tokens`)."""


def mix_gold(
    prompts: Sequence[str], rollouts: list[Encoded], gold: Mapping[str, Encoded]
) -> list[bool]:
    """Replace, in place, the last rollout of each group with no decomposition by its gold one.

    Args:
        prompts: The prompt of each rollout (a group = the rollouts of one prompt).
        rollouts: The encoded rollouts, in the order of ``prompts``.
        gold: Prompt -> the encoded gold trajectory (parallelizable questions only).

    Returns:
        Per rollout, whether it is now the gold trajectory.
    """
    groups: dict[str, list[int]] = {}
    for index, prompt in enumerate(prompts):
        groups.setdefault(prompt, []).append(index)
    mixed = [False] * len(prompts)
    for prompt, members in groups.items():
        if prompt in gold and not any(_decomposed(rollouts[i][2]) for i in members):
            rollouts[members[-1]] = gold[prompt]
            mixed[members[-1]] = True
    return mixed


def gold_transcripts(
    datasets: str | Sequence[str],
    questions: list[str],
    prompts: set[str],
    kind: str,
    *,
    corpus: str | None,
    max_turns: int,
    top_k: int,
) -> dict[str, list[dict[str, str]]]:
    """Record the gold ``parallel`` trajectory of each of ``questions`` (parallelizable ones).

    Their gold plans are read from ``datasets``, a question file or several.

    Recorded as ``train sft`` records them (scripted teacher, real graph and searcher, the
    rollouts' ``max_turns`` and ``top_k``); keyed by the first prompt and kept only where it
    equals a rollout prompt (``prompts``), so a gold row starts exactly where the group did.

    Raises:
        UserError: The policy does not use the ``rules`` prompt, or no gold trajectory fits.
    """
    from langgraph_parallel.retrieval.indexes import corpus_index
    from langgraph_parallel.train.gold import gold_questions
    from langgraph_parallel.train.synth import synthesize

    if kind != "rules":
        raise UserError("--gold-mix needs a policy trained by `train sft` (the rules prompt).")
    wanted = set(questions)
    files = [datasets] if isinstance(datasets, str) else list(datasets)  # a str is a Sequence too
    golds = [g for path in files for g in gold_questions(path) if g.question in wanted]
    records = synthesize(golds, "parallel", corpus_index(corpus), max_turns=max_turns, top_k=top_k)
    gold = {
        r["messages"][0]["content"]: r["messages"]
        for r in records
        if r["messages"][0]["content"] in prompts
    }
    if not gold:
        raise UserError(
            f"--gold-mix found no gold trajectory for the questions of {', '.join(files)}: it "
            "needs rows with supporting facts (e.g. hotpotqa_dev_distractor_subset)."
        )
    return gold


def _decomposed(steps: Sequence[str]) -> bool:
    # The reward's own test of a decomposition, so the mix fires exactly when that term is 0.
    return bool(first_search_decomposed(parse_action(step) for step in steps))
