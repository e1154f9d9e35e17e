"""Every way a live probe can fail ends in one line on stderr and exit 2, never a traceback."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.schema import cache

runner = CliRunner()


def one_line_exit_2(args: list[str], needle: str) -> None:
    result = runner.invoke(app, ["schema", *args])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert needle in lines[0], lines[0]
    assert result.stdout == ""


@pytest.fixture(scope="module")
def broken_engine_venv(tmp_path_factory) -> Path:
    """A real venv whose `vllm` package fails on import, like a wheel built for another torch."""
    root = tmp_path_factory.mktemp("broken") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = next(root.glob("lib/python3*/site-packages"))
    package = site / "vllm"
    package.mkdir()
    (package / "__init__.py").write_text('raise RuntimeError("undefined symbol: _ZN3c104cuda9SetDevice")\n')
    return root / "bin" / "python"


def test_missing_interpreter(tmp_path):
    one_line_exit_2(["vllm", "--python", str(tmp_path / "nope" / "python")], "interpreter not found")


def test_interpreter_is_a_folder(tmp_path):
    one_line_exit_2(["vllm", "--python", str(tmp_path)], "not an executable interpreter")


def test_engine_not_installed_there():
    assert importlib.util.find_spec("vllm") is None
    one_line_exit_2(["vllm", "--python", sys.executable], "vllm is not installed in")


def test_probe_crash(broken_engine_venv):
    one_line_exit_2(["vllm", "--python", str(broken_engine_venv)], "undefined symbol")


@pytest.mark.engine
def test_probe_timeout(vllm_python):
    # Importing vLLM takes far more than a second: a real timeout, not a simulated one.
    one_line_exit_2(["vllm", "--python", str(vllm_python), "--timeout", "1", "--no-cache"], "timed out after 1 s")


@pytest.mark.engine
def test_version_mismatch(vllm_python):
    # Served from the session's cache when the live tests ran first; probes otherwise.
    one_line_exit_2(["vllm", "--python", str(vllm_python), "--version", "0.16.0"], "not 0.16.0")


def test_cache_key_follows_the_installed_files(tmp_path):
    root = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    python = root / "bin" / "python"
    assert cache.cache_key("vllm", python, "vllm") is None
    site = next(root.glob("lib/python3*/site-packages"))
    dist_info = site / "vllm-0.33.0.dist-info"
    dist_info.mkdir()
    (dist_info / "RECORD").write_text("vllm/__init__.py,,\n")
    first = cache.cache_key("vllm", python, "vllm")
    assert first is not None and first == cache.cache_key("vllm", python, "vllm")
    (dist_info / "RECORD").write_text("vllm/__init__.py,,\nvllm/config.py,,\n")
    assert cache.cache_key("vllm", python, "vllm") != first
    dist_info.rename(site / "vllm-0.34.0.dist-info")
    assert cache.cache_key("vllm", python, "vllm") not in (None, first)
