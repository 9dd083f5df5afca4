"""``langgraph-parallel train``: GRPO on ParallelSearch rollouts (see :mod:`.grpo`)."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from langgraph_parallel.paths import repo_data_dir


def cmd_train(args: argparse.Namespace) -> int:
    """Train, then print where the model, the log and the curve are."""
    from langgraph_parallel.rewards import RewardConfig
    from langgraph_parallel.train.grpo import TrainConfig, train

    reward = RewardConfig(decomposition=args.lambda_d, alpha=args.alpha, search_count=args.lambda_s)
    config = TrainConfig(
        dataset=args.dataset,
        out=args.out,
        model=args.model,
        steps=args.steps,
        questions_per_step=args.questions_per_step,
        group_size=args.group_size,
        learning_rate=args.learning_rate,
        lora=args.lora,
        beta=args.beta,
        temperature=args.temperature,
        max_turns=args.max_turns,
        max_tokens=args.max_tokens,
        top_k=args.top_k,
        limit=args.limit,
        exclude=None if args.exclude == "none" else args.exclude,
        corpus=args.corpus,
        seed=args.seed,
        reward=reward,
    )
    command = shlex.join(["langgraph-parallel", *sys.argv[1:]])
    folder = train(config, command=command)
    print(f"model: {folder}")
    print(f"log: {folder.parent / 'metrics.jsonl'}")
    print(f'try it: langgraph-parallel ask --model {folder} "<question>"')
    return 0


def add_train_parser(sub: Any) -> None:
    """Add the ``train`` subcommand to the CLI's subparsers."""
    p = sub.add_parser("train", help="GRPO-train the ParallelSearch behaviour (train extra)")
    p.add_argument("--dataset", required=True, help="training questions, normalised .jsonl(.gz)")
    p.add_argument("--out", required=True, help="output folder (model/, metrics.jsonl, ...)")
    p.add_argument("--steps", type=int, default=50, help="optimizer steps")
    p.add_argument("--model", default="smollm2", help="smollm2, gemma3, or a model folder")
    p.add_argument("--group-size", type=int, default=4, help="rollouts per question")
    p.add_argument("--questions-per-step", type=int, default=1)
    p.add_argument("--learning-rate", type=float, default=5e-6)
    p.add_argument("--lora", action="store_true", help="train LoRA adapters, merged on save")
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
    p.add_argument("--lambda-d", type=float, default=0.15, help="decomposition reward")
    p.add_argument("--alpha", type=float, default=3.0, help="sequential bonus = lambda_d/alpha")
    p.add_argument("--lambda-s", type=float, default=0.35, help="search-count reward")
    p.set_defaults(func=cmd_train)
