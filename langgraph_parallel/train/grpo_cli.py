"""``langgraph-parallel train grpo``: its options and the command that runs it."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from langgraph_parallel.paths import repo_data_dir

__all__ = ["add_grpo_parser", "cmd_train"]


def cmd_train(args: argparse.Namespace) -> int:
    """Train, then print where the model, the log and the curve are."""
    from langgraph_parallel.rewards import RewardConfig
    from langgraph_parallel.train.grpo import TrainConfig, train

    reward = RewardConfig(
        decomposition=args.lambda_d,
        alpha=args.alpha,
        search_count=args.lambda_s,
        require_answer=not args.no_gate,
    )
    config = TrainConfig(
        dataset=args.dataset[0] if len(args.dataset) == 1 else tuple(args.dataset),
        out=args.out,
        model=args.model,
        steps=args.steps,
        questions_per_step=args.questions_per_step,
        group_size=args.group_size,
        micro_batch=args.micro_batch,
        learning_rate=args.learning_rate,
        lora=args.lora,
        beta=args.beta,
        temperature=args.temperature,
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        top_k=args.top_k,
        limit=args.limit,
        balanced=not args.unbalanced,
        gold_mix=args.gold_mix,
        exclude=None if args.exclude == "none" else args.exclude,
        corpus=args.corpus,
        seed=args.seed,
        reward=reward,
        warmup_steps=args.warmup_steps,
        dev=args.dev,
        dev_every=args.dev_every,
        save_steps=args.save_steps,
        time_budget_s=args.time_budget,
        resume=args.resume,
        merge=not args.no_merge,
        decoding=args.decoding,
    )
    command = shlex.join(["langgraph-parallel", *sys.argv[1:]])
    folder = train(config, command=command)
    print(f"model: {folder}")
    # --lora: the shippable adapter of the base (with --no-merge it is the folder itself)
    if folder.name != "adapter" and (folder.parent / "adapter").is_dir():
        print(f"adapter: {folder.parent / 'adapter'}")
    print(f"log: {folder.parent / 'metrics.jsonl'}")
    print(f'try it: langgraph-parallel ask --model {folder} "<question>"')
    return 0


def add_grpo_parser(kinds: Any) -> None:
    """Add ``train grpo`` to the ``train`` subparsers."""
    p = kinds.add_parser("grpo", help="GRPO on ParallelSearch rollouts")
    p.add_argument(
        "--dataset",
        required=True,
        action="append",
        help="training questions, normalised .jsonl(.gz); repeat to pool several files",
    )
    p.add_argument("--out", required=True, help="output folder (model/, metrics.jsonl, ...)")
    p.add_argument("--steps", type=int, default=50, help="optimizer steps")
    p.add_argument(
        "--model",
        "--init",
        default="smollm2-parallel",
        help="policy to start from: an SFT policy (smollm2-parallel, an adapter folder from "
        "train sft), smollm2, gemma3, or a model folder",
    )
    p.add_argument("--group-size", type=int, default=4, help="rollouts per question")
    p.add_argument("--questions-per-step", type=int, default=1)
    p.add_argument(
        "--micro-batch",
        type=int,
        default=None,
        help="rollouts per loss forward/backward (default: all of a step; fewer: less memory)",
    )
    p.add_argument("--learning-rate", type=float, default=5e-6)
    p.add_argument(
        "--lora",
        action="store_true",
        help="train a LoRA adapter (the start's own when it is an SFT policy); writes adapter/ "
        "and the merged model/",
    )
    p.add_argument("--beta", type=float, default=0.0, help="KL coefficient (0: no reference)")
    p.add_argument("--temperature", type=float, default=0.7, help="rollout sampling temperature")
    p.add_argument("--max-turns", type=int, default=3, help="model steps per rollout")
    p.add_argument("--max-tokens", type=int, default=96, help="tokens per model step")
    p.add_argument("--top-k", type=int, default=2, help="documents per sub-query")
    p.add_argument("--limit", type=int, default=None, help="use N questions of the dataset")
    p.add_argument(
        "--exclude",
        default=str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz"),
        help="question file held out from training (default: the bundled evaluation sample; "
        "'none' to keep all)",
    )
    p.add_argument("--corpus", default=None, help="corpus .jsonl(.gz); default: bundled HotpotQA")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--unbalanced", action="store_true", help="do not balance question classes")
    p.add_argument(
        "--gold-mix",
        action="store_true",
        help="put the gold trajectory into a parallelizable question's group when no rollout "
        "decomposed (needs gold plans in --dataset)",
    )
    p.add_argument(
        "--no-gate", action="store_true", help="pay decomposition/search terms without an answer"
    )
    p.add_argument("--warmup-steps", type=int, default=0, help="linear warm-up, then constant")
    p.add_argument(
        "--dev",
        default=None,
        help="held-out question file answered greedily every --dev-every steps; the best "
        "step's adapter goes to OUT/best/",
    )
    p.add_argument("--dev-every", type=int, default=10)
    p.add_argument(
        "--save-steps", type=int, default=0, help="checkpoint every N steps (0: budget/last only)"
    )
    p.add_argument(
        "--time-budget",
        type=float,
        default=None,
        metavar="SECONDS",
        help="end this piece with a checkpoint after about SECONDS of training (--resume goes on)",
    )
    p.add_argument(
        "--resume", action="store_true", help="continue from the newest checkpoint in OUT/trainer"
    )
    p.add_argument(
        "--no-merge", action="store_true", help="write OUT/adapter only, not the merged OUT/model"
    )
    p.add_argument(
        "--decoding",
        choices=("plain", "merged", "static"),
        default="plain",
        help="how rollouts decode: the PEFT model as it is, LoRA merged while decoding, or "
        "merged with a static KV cache (compiled on a GPU)",
    )
    p.add_argument("--lambda-d", type=float, default=0.15, help="decomposition reward")
    p.add_argument("--alpha", type=float, default=3.0, help="sequential bonus = lambda_d/alpha")
    p.add_argument("--lambda-s", type=float, default=0.35, help="search-count reward")
    p.set_defaults(func=cmd_train)
