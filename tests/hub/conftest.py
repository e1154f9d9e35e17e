"""Fixtures of the hub tests: a loopback hub server over a folder of repositories, and specprobe run
against it as a user runs it (the CLI in a subprocess, with HF_ENDPOINT / HF_HOME / HF_TOKEN set, as
huggingface_hub reads some of them when it is imported) or in-process (``HubSession`` given the
endpoint and cache explicitly).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import huggingface_hub.constants
import pytest

from specprobe.demo.fixtures import DraftSpec, build_draft, target_config, write_json
from tests.hub.hubserver import HubServer, serve_hub

TOKEN = "hf_specprobeTestToken0123456789abcdef"  # a made-up token the tests grep every output for


def llama8b_sized(draft_format: str = "specforge") -> DraftSpec:
    """An EAGLE-3 drafter of Llama-3.1-8B's sizes (hidden 4096, vocab 128256, draft vocab 32000) as a sparse
    file: 850 MB on paper, a few hundred kB on disk (d2t/t2d are real)."""
    return DraftSpec(
        draft_format=draft_format,
        hidden_size=4096,
        num_attention_heads=32,
        num_key_value_heads=8,
        intermediate_size=14336,
        vocab_size=128256,
        draft_vocab_size=32000,
        aux_layer_ids=[1, 15, 28],
        dtype="BF16",
        sparse=True,
    )


def llama8b_target(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "config.json", target_config(hidden_size=4096, vocab_size=128256, num_hidden_layers=32))
    return folder


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def report(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.stdout)
        return loaded

    def fired(self) -> set[str]:
        return {f["rule"] for f in self.report["findings"]}


def hub_env(url: str | None, home: Path, **extra: str) -> dict[str, str]:
    """The environment of a CI job: this machine's, less every Hugging Face setting, plus these."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGING_FACE", "SPECPROBE_HUB"))}
    env.update({"HF_HOME": str(home), "HF_HUB_DISABLE_TELEMETRY": "1", "NO_COLOR": "1"})
    if url is not None:
        env["HF_ENDPOINT"] = url
    env.update(extra)
    return env


def specprobe(args: list[str], env: dict[str, str], *, timeout: float = 120) -> Run:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "specprobe", *args], capture_output=True, text=True, env=env, check=False,
        timeout=timeout,
    )
    return Run(done.returncode, done.stdout, done.stderr, time.monotonic() - started)


@pytest.fixture
def online_in_process(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """In-process runs that may ask the (loopback) hub with no token of this machine's: huggingface_hub's
    offline switch and token path are fixed when it is first imported, so they are set here, not by env."""
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "no-stored-token"))
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def repos(tmp_path: Path) -> Path:
    root = tmp_path / "repos"
    root.mkdir()
    return root


@pytest.fixture
def hub(repos: Path) -> Iterator[HubServer]:
    with serve_hub(repos, tokens=(TOKEN,)) as server:
        yield server


@pytest.fixture(scope="session")
def big_drafter(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A Llama-3.1-8B-sized drafter and its target's config.json, as local folders (shared, read-only)."""
    root = tmp_path_factory.mktemp("big")
    draft = build_draft(root / "draft", llama8b_sized())
    return draft, llama8b_target(root / "target")
