"""Sample the policy on training questions and score each sample with the reward (``train sample``).

The step between SFT and RL that fits a CPU: run the policy ``K`` times a question through the
real graph (``create_parallel_search_graph`` on the engine, the graph the benchmarks run), score
every sample with :mod:`langgraph_parallel.rewards`, and keep it all, so that training on what
the policy did right (and, with its wrong samples as negatives, preference pairs) can pick from
the rows. :mod:`.headroom` reads them back as pass@1, pass@K and the reward distribution.

- **Pool**: :mod:`.sample_pool` (the training files minus every evaluation question; each
  part's searcher).
- **Samples**: sample ``k`` of a question decodes at ``temperature`` with the seed
  :func:`sample_seed` derives from the run's seed, the question id and ``k``, set through the
  run's config (:func:`~langgraph_parallel.models.sampling.sampling_config`, which every step of
  the graph passes to the model). The ``K`` samples of a question run concurrently, so the
  engine's prefix cache serves their shared prompt.
- **Reward**: the policy's own (:func:`reward_config`): ``parallel`` the four-part reward,
  ``sequential`` the same without the decomposition term (the Search-R1 twin is not paid for a
  behaviour its graph cannot show). Gated by default, as ``train grpo``.
- **Rows and shards**: one row per sample (:func:`sample_row`: the transcript, the answer, each
  reward part, what it was computed from, the counters), no wall time in it, so a rerun writes
  the same rows. Question ``i`` belongs to shard ``i // shard_size``; finished samples are
  appended to ``shard-NNNNN.jsonl`` (flushed and fsynced) and a shard whose questions are all
  done is written sorted as ``shard-NNNNN.jsonl.gz`` (no time stamp). A rerun skips the samples
  written; ``run.json`` refuses other settings (``limit`` and ``samples`` may grow) and records
  each piece's commit, machine and seconds. A shard whose every sample failed stops the run and
  is not kept, so the rerun after the fix samples it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from langgraph_parallel.errors import UserError
from langgraph_parallel.rewards import COMPONENTS, RewardConfig, score_steps
from langgraph_parallel.train.gold import POLICIES, Policy
from langgraph_parallel.train.sample_pool import (
    CLASS_ALIASES,
    POOL_FILES,
    PoolQuestion,
    searchers_for,
    training_pool,
)
from langgraph_parallel.train.sample_shards import Shards

__all__ = ["SampleConfig", "reward_config", "sample", "sample_row", "sample_seed"]


def reward_config(policy: Policy, *, gate: bool = True) -> RewardConfig:
    """Return the reward a policy's samples are scored with (module docstring)."""
    if policy == "sequential":
        return RewardConfig(decomposition=0.0, require_answer=gate)
    return RewardConfig(require_answer=gate)


@dataclass(frozen=True, kw_only=True)
class SampleConfig:
    """Settings of ``langgraph-parallel train sample``.

    Attributes:
        out: Output folder: ``run.json``, the shards, ``summary.json``.
        policy: ``parallel`` (the ParallelSearch graph) or ``sequential`` (its twin).
        model: The policy's model; ``None``: the shipped ``smollm2-<policy>``.
        pool: Parts of :data:`POOL_FILES` to draw from.
        classes: Question classes to keep (``parallelizable``, ``sequential``).
        limit: Questions of each class (``None``: all).
        samples: Samples a question (``K``).
        temperature: Sampling temperature of every step.
        seed: Pool shuffle and sample seeds.
        max_turns: Model steps of the graph (as ``bench``).
        top_k: Documents per sub-query (as ``bench``).
        max_tokens: Token limit of one step (the graph's default).
        gate: Pay the decomposition and search-count terms only to a well-formed response.
        shard_size: Questions per shard.
        concurrency: Samples in flight at once (the engine batches them).
    """

    out: str
    policy: Policy = "parallel"
    model: str | None = None
    pool: tuple[str, ...] = tuple(POOL_FILES)
    classes: tuple[str, ...] = ("parallelizable", "sequential")
    limit: int | None = None
    samples: int = 4
    temperature: float = 0.7
    seed: int = 0
    max_turns: int = 4
    top_k: int = 3
    max_tokens: int = 256
    gate: bool = True
    shard_size: int = 25
    concurrency: int = 16

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise UserError(f"--policy takes {' or '.join(POLICIES)} (got {self.policy!r}).")
        if unknown := sorted(set(self.pool) - set(POOL_FILES)):
            raise UserError(f"--pool takes {','.join(POOL_FILES)} (got {', '.join(unknown)}).")
        if unknown := sorted(set(self.classes) - set(CLASS_ALIASES)):
            raise UserError(f"--classes takes comparison,bridge (got {', '.join(unknown)}).")
        object.__setattr__(
            self, "classes", tuple(dict.fromkeys(map(CLASS_ALIASES.get, self.classes)))
        )
        if not self.pool or not self.classes:
            raise UserError("--pool and --classes need at least one name each.")
        if self.samples < 1 or self.shard_size < 1 or self.concurrency < 1:
            raise UserError("--samples, --shard-size and --concurrency must be at least 1.")
        if self.limit is not None and self.limit < 1:
            raise UserError("--limit must be at least 1 (omit it for every question).")
        if self.temperature < 0:
            raise UserError(f"--temperature must be >= 0 (got {self.temperature}).")

    @property
    def model_name(self) -> str:
        """The model sampled: ``model``, else the shipped policy of ``policy``."""
        return self.model or f"smollm2-{self.policy}"

    @property
    def reward(self) -> RewardConfig:
        """The policy's reward (:func:`reward_config`)."""
        return reward_config(self.policy, gate=self.gate)

    def fixed_settings(self) -> dict[str, Any]:
        """Return the settings a resumed run must share with the rows written (not limit, K)."""
        keys = ("policy", "pool", "classes", "temperature", "seed")
        fixed = {key: getattr(self, key) for key in (*keys, "max_turns", "top_k", "max_tokens")}
        fixed.update(model=self.model_name, shard_size=self.shard_size)
        return {**fixed, "reward": asdict(self.reward)}


def sample_seed(seed: int, question_id: str, index: int) -> int:
    """Return the seed of sample ``index`` of a question (31 bits, the same on every machine)."""
    digest = hashlib.sha256(f"{seed}/{question_id}/{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def sample_row(
    item: PoolQuestion, index: int, seed: int, state: Mapping[str, Any], reward: RewardConfig
) -> dict[str, Any]:
    """Return one sample's row: what it did, each reward part and what they were computed from."""
    from langgraph_parallel.models.replies import message_text

    transcript = list(state.get("transcript") or [])
    messages = [
        {
            "role": {"ai": "assistant", "system": "system"}.get(m.type, "user"),
            "content": message_text(m),
        }
        for m in transcript
    ]
    steps = [m["content"] for m in messages[1:] if m["role"] == "assistant"]
    q = item.question
    scored = score_steps(steps, q.answers, q.question_class, reward)
    counters = state.get("counters") or {}
    return {
        "id": q.id,
        "sample": index,
        "seed": seed,
        "part": item.part,
        "dataset": q.dataset,
        "type": q.type,
        "class": q.question_class,
        "question": q.question,
        "gold_answers": list(q.answers),
        "answer": state.get("answer"),
        "stop_reason": state.get("stop_reason"),
        "reward": {**{c: getattr(scored, c) for c in COMPONENTS}, "total": scored.total},
        "correct": scored.correct,
        "valid_format": scored.valid_format,
        "decomposed": scored.decomposed,
        "searches": scored.searches,
        # Counters that do not depend on what else ran (cached tokens do): rows repeat exactly.
        **{k: int(counters.get(k, 0)) for k in ("llm_calls", "turns", "sub_queries")},
        **{k: int(counters.get(k, 0)) for k in ("prompt_tokens", "completion_tokens")},
        "messages": messages,
        "error": state.get("error"),
    }


def sample(
    config: SampleConfig,
    *,
    model: Any = None,
    searchers: Mapping[str, Any] | None = None,
    pool: list[PoolQuestion] | None = None,
    command: str = "",
    progress: bool = True,
) -> Path:
    """Sample the pool (or resume), write the shards and ``summary.json``; return the folder.

    Args:
        config: The run's settings.
        model: The chat model (default: ``ChatVLLM`` of ``config.model_name``).
        searchers: Pool part -> searcher (default: :func:`searchers_for`).
        pool: The questions (default: :func:`training_pool` of the config).
        command: The command line, recorded in ``run.json``.
        progress: Show a progress bar on stderr.

    Raises:
        UserError: ``out`` holds rows made with other settings, no question is left, or every
            sample of a shard failed (:func:`stop_if_all_failed`).
    """
    from langgraph_parallel.parallel_search.graph import create_parallel_search_graph
    from langgraph_parallel.train.headroom import write_summary

    items = pool or training_pool(
        config.pool, classes=config.classes, limit=config.limit, seed=config.seed
    )
    shards = Shards(Path(config.out), config.shard_size)
    shards.check(config.fixed_settings(), model=config.model_name)
    plan = [(i, item, k) for i, item in enumerate(items) for k in range(config.samples)]
    close_finished(shards, items, config)
    done = shards.done()
    todo = [(i, item, k) for i, item, k in plan if (item.question.id, k) not in done]
    if todo:
        shards.start_piece(command)
        if model is None:
            from langgraph_parallel.models.vllm_chat import ChatVLLM

            model = ChatVLLM(model=config.model_name)
        parts = tuple(dict.fromkeys(item.part for _, item, _ in todo))
        search = dict(searchers) if searchers is not None else searchers_for(parts)
        graphs = {
            part: create_parallel_search_graph(
                model,
                search[part],
                decompose=config.policy == "parallel",
                max_turns=config.max_turns,
                top_k=config.top_k,
                max_tokens=config.max_tokens,
            )
            for part in parts
        }
        run_samples(config, shards, items, todo, graphs, total=len(plan), progress=progress)
    write_summary(Path(config.out), config.samples, [item.question.id for item in items])
    return Path(config.out)


def close_finished(shards: Shards, items: list[PoolQuestion], config: SampleConfig) -> None:
    """Close the shards a killed run left whole but open (its last row written, not closed)."""
    for shard in shards.unclosed():
        ids = [q.question.id for q in items[shard * config.shard_size :][: config.shard_size]]
        if ids and shards.complete(shard, ids, config.samples):
            shards.close(shard, ids)


def run_samples(
    config: SampleConfig,
    shards: Shards,
    items: list[PoolQuestion],
    todo: list[tuple[int, PoolQuestion, int]],
    graphs: Mapping[str, Any],
    *,
    total: int,
    progress: bool,
) -> None:
    """Run the samples of ``todo`` (a question's together), appending each row as it finishes.

    ``todo`` is in question order, so the pool's workers take a question's samples together and
    the engine decodes them in one batch, the prompt they share served by its prefix cache.
    """
    from tqdm.auto import tqdm

    members = [
        [q.question.id for q in items[start : start + config.shard_size]]
        for start in range(0, len(items), config.shard_size)
    ]
    began, written = time.monotonic(), 0

    def one(job: tuple[int, PoolQuestion, int]) -> tuple[int, dict[str, Any]]:
        position, item, k = job
        seed = sample_seed(config.seed, item.question.id, k)
        return position, run_one(graphs[item.part], item, k, seed, config)

    with (
        tqdm(
            total=total, initial=total - len(todo), unit="traj", desc="sample", disable=not progress
        ) as bar,
        ThreadPoolExecutor(max_workers=config.concurrency, thread_name_prefix="sample") as pool,
    ):
        futures = [pool.submit(one, job) for job in todo]
        try:
            for future in as_completed(futures):  # rows are written by this thread alone
                position, row = future.result()
                shard = position // config.shard_size
                shards.append(shard, row)
                written += 1
                if shards.complete(shard, members[shard], config.samples):
                    stop_if_all_failed(shards, shard, config)
                    shards.close(shard, members[shard])
                # After every row: a killed piece's record counts what it wrote until then.
                shards.record_piece(written, time.monotonic() - began)
                bar.update(1)
        except BaseException:
            for future in futures:  # the samples in flight finish; the rest never start
                future.cancel()
            raise
        finally:
            shards.record_piece(written, time.monotonic() - began)


def stop_if_all_failed(shards: Shards, shard: int, config: SampleConfig) -> None:
    """Stop the run at a finished shard whose every sample failed, keeping none of its rows.

    A cause every sample meets (a model that does not load, a searcher that is gone) would
    otherwise fill the whole pool with error rows, and a rerun would skip them as done.

    Raises:
        UserError: Every sample of ``shard`` failed; names the first error and how to go on.
    """
    error = shards.failed(shard)
    if error is None:
        return
    shards.discard(shard)
    raise UserError(
        f"Every sample of shard {shard} failed, so train sample stopped instead of writing "
        f"error rows for the whole pool; the first error: {error}. Fix its cause and run the "
        f"same command again: it keeps the shards written and samples shard {shard} anew "
        f"(its rows were not kept; {config.out})."
    )


def run_one(
    graph: Any, item: PoolQuestion, index: int, seed: int, config: SampleConfig
) -> dict[str, Any]:
    """Run one sample through the graph and return its row (a failure is recorded in it).

    Raises:
        UserError: A set-up problem every sample would hit.
    """
    from langgraph_parallel.errors import reported_error
    from langgraph_parallel.models.sampling import sampling_config

    options = sampling_config(temperature=config.temperature, seed=seed)
    try:
        state = dict(
            graph.invoke({"question": item.question.question}, config={"configurable": options})
        )
    except Exception as exc:  # one sample's failure is its row; a UserError is re-raised
        state = {"error": reported_error(exc), "stop_reason": "error"}
    return sample_row(item, index, seed, state, config.reward)
