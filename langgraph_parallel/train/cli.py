"""``langgraph-parallel train sft|grpo|sample|dpo|curve``: SFT, GRPO, sampling, DPO, a summary.

The project's lab adds ``train chains`` (the data recipes of the shipped policies) to the
sub-parsers :func:`add_train_parser` returns.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any, cast

from langgraph_parallel.paths import repo_data_dir, shared_data_dir
from langgraph_parallel.train.grpo_cli import add_grpo_parser
from langgraph_parallel.train.reward_curve import add_curve_parser


def cmd_sft(args: argparse.Namespace) -> int:
    """Synthesise trajectories and train one LoRA adapter per policy."""
    from langgraph_parallel.errors import UserError
    from langgraph_parallel.train.sft import SFTRunConfig, sft, synthesize_run

    if args.data and (
        args.dataset or args.corpus or args.synthesize_only or args.passage_sentences
    ):
        raise UserError(
            "--data trains on trajectories already synthesised; --dataset, --corpus, "
            "--passage-sentences and --synthesize-only belong to the run that makes them: drop "
            "them or drop --data."
        )
    policies, init = args.policies, args.init
    if args.from_samples:
        from langgraph_parallel.train.from_samples import sampled_defaults

        if args.data or args.dataset or args.corpus or args.synthesize_only:
            raise UserError(
                "--from-samples trains on the policy's own samples; --data, --dataset, --corpus "
                "and --synthesize-only belong to a synthesis: drop them."
            )
        policies, init = sampled_defaults(args.from_samples, policies, init)
    policies = policies or "parallel,sequential"
    if args.resume and args.synthesize_only:
        raise UserError(
            "--resume continues a training, --synthesize-only trains nothing: drop one."
        )
    config = SFTRunConfig(
        datasets=tuple(args.dataset or args.dataset_default),
        out=args.out,
        policies=tuple(cast(Any, p.strip()) for p in policies.split(",") if p.strip()),
        model=args.model,
        init=init,
        per_class=args.per_class or None,
        exclude=() if args.exclude == ["none"] else tuple(args.exclude or args.exclude_default),
        corpus=args.corpus,
        data=args.data,
        from_samples=tuple(args.from_samples or ()),
        yes_no_min_right=args.yes_no_min_right,
        loss_steps=args.loss_steps,
        epochs=args.epochs,
        learning_rate=args.learning_rate,
        warmup_steps=args.warmup_steps,
        batch_size=args.batch_size,
        micro_batch=args.micro_batch,
        lora_rank=args.lora_rank,
        lora_layers=args.lora_layers,
        max_turns=args.max_turns,
        top_k=args.top_k,
        passage_sentences=args.passage_sentences,
        seed=args.seed,
        save_steps=args.save_steps,
        resume=args.resume,
    )
    command = shlex.join(["langgraph-parallel", *sys.argv[1:]])
    if args.synthesize_only:
        data = synthesize_run(config, command=command)
        print(f"trajectories: {data} (how they were made: {data.with_name('data.json')})")
        print(f"  train on them: langgraph-parallel train sft --data {data} --out <folder>")
        return 0
    for policy, folder in sft(config, command=command).items():
        print(f"{policy}: {folder}")
        print(f'  try it: langgraph-parallel ask --model {folder} "<question>"')
    return 0


def cmd_sample(args: argparse.Namespace) -> int:
    """Sample the policy on the training pool and score the samples (or summarise a folder)."""
    import json
    from pathlib import Path

    from langgraph_parallel.train.headroom import markdown, write_summary

    if not args.summary:
        from langgraph_parallel.train.sample import SampleConfig, sample

        config = SampleConfig(
            out=args.out,
            policy=args.policy,
            model=args.model,
            pool=tuple(p.strip() for p in args.pool.split(",") if p.strip()),
            classes=tuple(c.strip() for c in args.classes.split(",") if c.strip()),
            limit=args.limit,
            samples=args.samples,
            temperature=args.temperature,
            seed=args.seed,
            max_turns=args.max_turns,
            top_k=args.top_k,
            max_tokens=args.max_tokens,
            gate=not args.no_gate,
            shard_size=args.shard_size,
            concurrency=args.concurrency,
        )
        sample(config, command=shlex.join(["langgraph-parallel", *sys.argv[1:]]))
    path = Path(args.out) / "summary.json"
    if args.summary or not path.is_file():
        path = write_summary(Path(args.out), args.samples)
    summary = json.loads(path.read_text(encoding="utf-8"))
    print(json.dumps({k: v for k, v in summary.items() if k != "by_part"}, indent=2))
    print(markdown(summary), end="")
    print(f"wrote {path}")
    return 0


def cmd_dpo(args: argparse.Namespace) -> int:
    """Train the sampled policy with DPO on pairs of its own samples."""
    from langgraph_parallel.train.dpo import DPORunConfig, dpo
    from langgraph_parallel.train.from_samples import sampled_defaults

    policy, init = sampled_defaults(args.from_samples, args.policies, args.init)
    config = DPORunConfig(
        from_samples=tuple(args.from_samples),
        out=args.out,
        policy=cast(Any, policy),
        init=init,
        beta=args.beta,
        rpo_alpha=args.rpo_alpha,
        epochs=args.epochs,
        learning_rate=args.learning_rate,
        warmup_steps=args.warmup_steps,
        batch_size=args.batch_size,
        micro_batch=args.micro_batch,
        seed=args.seed,
        save_steps=args.save_steps,
        resume=args.resume,
    )
    folder = dpo(config, command=shlex.join(["langgraph-parallel", *sys.argv[1:]]))
    print(f"{config.policy}: {folder}")
    print(f'  try it: langgraph-parallel ask --model {folder} "<question>"')
    return 0


def add_train_parser(sub: Any) -> Any:
    """Add ``train sft|grpo|sample|dpo|curve``; return ``train``'s sub-parsers."""
    train = sub.add_parser("train", help="train the embedded model's behaviour (train extra)")
    kinds = train.add_subparsers(dest="train_command", required=True)
    _add_sft_parser(kinds)
    add_grpo_parser(kinds)
    _add_sample_parser(kinds)
    _add_dpo_parser(kinds)
    add_curve_parser(kinds)
    return kinds


def _add_sft_parser(kinds: Any) -> None:
    from langgraph_parallel.train.config import DEFAULT_DATASETS

    held_out = str(repo_data_dir() / "hotpotqa_dev_sample300.jsonl.gz")
    default_data = str(shared_data_dir() / DEFAULT_DATASETS[0])
    p = kinds.add_parser("sft", help="LoRA SFT on synthetic trajectories of the real graph")
    p.add_argument(
        "--dataset",
        action="append",
        help=f"question file with supporting facts (repeatable; default {default_data})",
    )
    p.add_argument("--out", required=True, help="output folder: data.jsonl, <policy>/ adapters")
    p.add_argument(
        "--policies",
        default=None,
        help="comma-separated (default parallel,sequential; with --from-samples the policy the "
        "folders sampled)",
    )
    p.add_argument("--model", default="smollm2", help="base: smollm2, gemma3, or a model folder")
    p.add_argument(
        "--init",
        default=None,
        help="keep training this adapter (smollm2-parallel, a train sft folder) on its own base "
        "instead of a fresh LoRA on --model; --policies must be its policy",
    )
    p.add_argument("--per-class", type=int, default=150, help="questions per class (0: all)")
    p.add_argument(
        "--exclude",
        action="append",
        help=f"question file held out (repeatable; default {held_out}; 'none' for nothing)",
    )
    p.add_argument("--corpus", default=None, help="corpus to search (default: see train/sft.py)")
    p.add_argument(
        "--synthesize-only",
        action="store_true",
        help="write OUT/data.jsonl (both policies) and OUT/data.json, then stop",
    )
    p.add_argument(
        "--data",
        default=None,
        help="train on this trajectory file (from --synthesize-only) instead of synthesising",
    )
    p.add_argument(
        "--from-samples",
        action="append",
        metavar="FOLDER",
        help="train on the best right sample of each question of these `train sample` folders "
        "(repeatable; rejection-sampling fine-tuning) instead of synthesising; --init defaults "
        "to the model they sampled",
    )
    p.add_argument(
        "--yes-no-min-right",
        type=int,
        default=1,
        metavar="N",
        help="with --from-samples, keep a question answered yes or no only when at least N of "
        "its samples are right (default 1: a right guess is kept)",
    )
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--learning-rate", type=float, default=5e-4)
    p.add_argument("--warmup-steps", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--micro-batch", type=int, default=2, help="sequences per forward on a CPU")
    p.add_argument("--lora-rank", type=int, default=16)
    p.add_argument("--lora-layers", type=int, help="adapt only the last N layers (default: all)")
    p.add_argument(
        "--loss-steps",
        choices=("all", "last"),
        default="all",
        help="the model's steps the loss is on: all, or the last (the reading that answers)",
    )
    p.add_argument("--max-turns", type=int, default=4)
    p.add_argument("--top-k", type=int, default=3)
    p.add_argument(
        "--passage-sentences",
        type=int,
        default=None,
        metavar="N",
        help="show each retrieved passage as its title and first N sentences (default: whole "
        "passages); recorded in data.json and the adapters' cards, so the trained model is "
        "shown the same at inference",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--save-steps",
        type=int,
        default=10,
        help="checkpoint every N optimizer steps under OUT/<policy>/trainer/ (0: none)",
    )
    p.add_argument(
        "--resume",
        action="store_true",
        help="continue an interrupted run in --out: finished policies are skipped, the next "
        "continues from its last checkpoint; without --data on OUT/data.jsonl if written",
    )
    p.set_defaults(func=cmd_sft, dataset_default=[default_data], exclude_default=[held_out])


def _add_sample_parser(kinds: Any) -> None:
    pools = "hotpotqa,pairs,2wiki,musique"  # train/sample.py's POOL_FILES, without importing it
    p = kinds.add_parser(
        "sample",
        help="sample the policy K times a training question through the real graph, each "
        "sample scored by the reward (resumable shards); --summary: pass@1, pass@K, rewards",
    )
    p.add_argument("--out", required=True, help="folder: run.json, shard-*.jsonl.gz, summary.json")
    p.add_argument("--policy", choices=("parallel", "sequential"), default="parallel")
    p.add_argument("--model", default=None, help="default: the shipped smollm2-<policy>")
    p.add_argument(
        "--pool",
        default=pools,
        help=f"comma-separated parts of the training pool (default {pools}); every evaluation "
        "file's questions and the README question's people are left out",
    )
    p.add_argument(
        "--classes",
        default="comparison,bridge",
        help="question classes: comparison (parallelizable), bridge (sequential)",
    )
    p.add_argument("--limit", type=int, default=None, help="questions of each class (default all)")
    p.add_argument("--samples", type=int, default=4, help="K, samples a question")
    p.add_argument("--temperature", type=float, default=0.7)
    p.add_argument("--seed", type=int, default=0, help="pool shuffle and every sample's seed")
    p.add_argument("--max-turns", type=int, default=4)
    p.add_argument("--top-k", type=int, default=3)
    p.add_argument("--max-tokens", type=int, default=256, help="token limit of one step")
    p.add_argument(
        "--no-gate", action="store_true", help="pay decomposition/search terms without an answer"
    )
    p.add_argument("--shard-size", type=int, default=25, help="questions a shard")
    p.add_argument("--concurrency", type=int, default=16, help="samples in flight at once")
    p.add_argument(
        "--summary",
        action="store_true",
        help="sample nothing: summarise OUT's shards at --samples (summary.json, a table)",
    )
    p.set_defaults(func=cmd_sample)


def _add_dpo_parser(kinds: Any) -> None:
    p = kinds.add_parser(
        "dpo",
        help="DPO on the policy's own samples: per question its best right sample against a "
        "wrong one (train sample folders), the sampled policy its own reference",
    )
    p.add_argument(
        "--from-samples",
        action="append",
        required=True,
        metavar="FOLDER",
        help="a train sample folder (repeatable)",
    )
    p.add_argument("--out", required=True, help="folder: pairs.jsonl, pairs.json, <policy>/")
    p.add_argument("--policies", default=None, help="default: the policy the folders sampled")
    p.add_argument("--init", default=None, help="the adapter trained (default: the sampled one)")
    p.add_argument("--beta", type=float, default=0.1)
    p.add_argument(
        "--rpo-alpha",
        type=float,
        default=0.0,
        help="weight of the chosen side's token NLL added to the DPO loss (RPO; 0: plain DPO)",
    )
    p.add_argument("--epochs", type=float, default=1.0)
    p.add_argument("--learning-rate", type=float, default=5e-5)
    p.add_argument("--warmup-steps", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=8, help="pairs per optimizer step")
    p.add_argument("--micro-batch", type=int, default=1, help="pairs per forward on a CPU")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--save-steps", type=int, default=10, help="checkpoint every N steps (0: none)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run in --out")
    p.set_defaults(func=cmd_dpo)
