"""A built wheel ships the snapshots: installed in a fresh venv, outside the repository, it serves them."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_serves_snapshots_from_outside_the_repo(tmp_path):
    # Build from a copy: setuptools writes build/ and *.egg-info next to the sources it builds.
    source = tmp_path / "source"
    shutil.copytree(REPO / "specprobe", source / "specprobe", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    wheels = tmp_path / "wheels"
    # Without setuptools at hand pip builds in isolation (and fetches it); with it, offline and faster.
    isolation = [] if importlib.util.find_spec("setuptools") is None else ["--no-build-isolation"]
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-q", "-w", str(wheels), str(source)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    wheel = next(wheels.glob("specprobe-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # The dependencies (typer, rich, ...) come from this interpreter's own site-packages, whatever
    # it is: a venv's --system-site-packages would see only the base interpreter's, not an outer
    # venv's. Plain path lines in a .pth are appended after the new venv's own site-packages (so the
    # wheel's specprobe comes first) and the .pth files there are not run (so no editable install
    # of specprobe is activated).
    own_site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    outer = [path for path in [*site.getsitepackages(), site.getusersitepackages()] if Path(path).is_dir()]
    Path(own_site, "zz-outer-site.pth").write_text("\n".join(outer) + "\n", encoding="utf-8")
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)],
        check=True, capture_output=True, text=True, timeout=300,
    )
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    # PYTHONPATH (a source checkout on it) would shadow the installed wheel.
    clean_env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    where = subprocess.run(
        [str(python), "-c", "import specprobe; print(specprobe.__file__)"],
        cwd=outside, check=True, capture_output=True, text=True, env=clean_env,
    ).stdout.strip()
    assert Path(where).is_relative_to(venv), where
    shipped = sorted(p.name for p in (Path(where).parent / "data" / "schemas" / "vllm").glob("*.json"))
    assert "0.33.0.json" in shipped
    # The live probes must ship too: they run from the installed package.
    probes = Path(where).parent / "engines" / "probes"
    assert {"vllm_probe.py", "sglang_probe.py", "_common.py"} <= {p.name for p in probes.glob("*.py")}
    completed = subprocess.run(
        [str(venv / "bin" / "specprobe"), "schema", "vllm", "--version", "0.33.0", "--format", "json"],
        cwd=outside, capture_output=True, text=True, timeout=120, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert completed.returncode == 0, completed.stderr
    payload = json.loads(completed.stdout)
    assert payload["version"] == "0.33.0" and payload["source"] == "snapshot"
    assert "eagle3" in payload["methods"]
