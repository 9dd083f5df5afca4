"""What this CPU computes natively, and so which dtype the CPU engine runs in."""

from __future__ import annotations

import os
import platform
import subprocess
from typing import Any

__all__ = ["cpu_dtype", "cpu_has_native_bf16", "machine"]


def cpu_has_native_bf16() -> bool:
    """Whether this CPU computes in bfloat16 natively (AVX-512 BF16 or AMX tiles).

    Read with torch's own probes, the ones vLLM's CPU backend uses for its bfloat16 kernels.
    """
    try:
        import torch
    except ImportError:
        return False
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return any(bool(getattr(torch.cpu, name, lambda: False)()) for name in probes)


def cpu_dtype() -> str:
    """Return the CPU engine's dtype for our float32 checkpoints: ``bfloat16`` only where native.

    vLLM downcasts a float32 checkpoint to bfloat16 on every CPU. Without native bfloat16
    (an AVX2-only AMD EPYC, issue 39) that is the slow path: prefill 68 vs 340 tok/s in float32
    and a warm question 20.6 s vs 8.7 s. Where the CPU has it, bfloat16 stays (vLLM's choice).
    """
    return "bfloat16" if cpu_has_native_bf16() else "float32"


def machine() -> dict[str, Any]:
    """Describe this machine for a figure's record: CPU model, cores, native bfloat16, GPU.

    Speeds differ between CPUs of one cloud machine kind, so every timing names its CPU.
    """
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        lscpu = ""
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in lscpu.splitlines()
            if line.startswith("Model name")
        ),
        platform.processor() or platform.machine(),
    )
    flags = next((line for line in lscpu.splitlines() if line.startswith("Flags")), "").split()
    try:
        import torch

        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    except ImportError:
        gpu = None
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "avx512_bf16": "avx512_bf16" in flags,
        "amx": "amx_tile" in flags,
        "gpu": gpu,
    }
