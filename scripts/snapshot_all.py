"""Refresh the shipped schema snapshots of every engine release worth checking, resumably.

For each release: a venv made by uv (downloads and unpacked wheels cached under
``~/.cache/specprobe/uv``, venvs hard-linked from that cache), the release installed with its own
pinned dependencies, the probe run under that interpreter, and the probe's raw reply kept under
``~/.cache/specprobe/snapshots-raw/<engine>/<version>.json`` with the probe hash and install figures.
A release whose raw reply was made with the current probe hash is skipped, so an interrupted run
resumes where it stopped. ``build`` then turns the raw replies into the package's snapshots,
dropping patch releases whose speculative surface equals the release before them.

    python scripts/snapshot_all.py plan               # the releases, in install order
    python scripts/snapshot_all.py extract [--engine vllm] [--only 0.8.5,0.9.0] [--limit N]
    python scripts/snapshot_all.py build              # raw replies -> specprobe/data/schemas

Where a release's own dependencies cannot be installed on this Python, its package alone is laid
over the dependencies of a provisioned engine venv (``--overlay``); the provenance says so.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HOME_CACHE = Path(os.environ.get("SPECPROBE_SNAPSHOT_HOME", Path.home() / ".cache" / "specprobe"))
UV_CACHE = HOME_CACHE / "uv"
VENVS = HOME_CACHE / "snap-venvs"
RAW = HOME_CACHE / "snapshots-raw"
SOURCES = HOME_CACHE / "engine-sources"
PYTHON = os.environ.get("SPECPROBE_SNAPSHOT_PYTHON", sys.executable)
# Other work shares this disk: below this many free bytes the uv cache is emptied before the next install.
MIN_FREE = int(float(os.environ.get("SPECPROBE_SNAPSHOT_MIN_FREE_GB", "22")) * 2**30)
INSTALL_TIMEOUT_S = 1500

# The first release of each engine with EAGLE-3: vLLM's V1 EAGLE-3 proposer (method "eagle3") shipped
# in 0.8.5 (https://github.com/vllm-project/vllm/blob/v0.8.5/vllm/config.py, SpeculativeConfig.method);
# SGLang's EAGLE3 algorithm in 0.4.4
# (https://github.com/sgl-project/sglang/blob/v0.4.4/python/sglang/srt/speculative/spec_info.py).
RANGES: dict[str, tuple[str, str]] = {"vllm": ("0.8.5", "0.34.0"), "sglang": ("0.4.4", "0.5.23")}
# Probe versions whose replies differ from the current probe's only in facts read from source files
# (EAGLE-3 fc sizing followed one assignment further): ``refresh`` re-reads those facts from the
# release's kept sources with the current probe code instead of installing the release again.
SOURCE_ONLY_CHANGES = {"vllm": {"fc80a04fccd27bb1"}, "sglang": {"585bc25be4a40208"}}
# Earlier probes whose replies the current probe repeats exactly, except where a listed part failed:
# the SGLang probe since 13096294b99f98bc reads SpeculativeAlgorithm from spec_info.py's source when the
# module does not import (0.5.6, 0.5.7 import sgl_kernel, which needs libcuda); replies of the earlier
# probe are kept unless their algorithms failed that way, and those releases are extracted again.
COMPATIBLE_PROBES = {"sglang": {"b7887f5ee30a662b"}}
# Provisioned venvs whose dependencies an overlay install borrows.
OVERLAY_BASES = {"vllm": "vllm-0.33.0", "sglang": "sglang-0.5.23"}


@dataclasses.dataclass(frozen=True)
class Release:
    engine: str
    version: str

    @property
    def line(self) -> str:
        """The release line: vLLM's minor (0.10), SGLang's x.y.z (SGLang ships a line per patch number)."""
        release = Version(self.version).release
        if self.engine == "vllm":
            return ".".join(map(str, release[:2]))
        return ".".join(map(str, release[:3]))

    @property
    def name(self) -> str:
        return f"{self.engine}-{self.version}"


def probe_hash(engine: str) -> str:
    """Hash of the engine's probe script and the shared helpers: a raw reply made by other probe code is stale."""
    from specprobe.engines._probe import PROBES_DIR

    digest = hashlib.sha256()
    for script in (PROBES_DIR / "_common.py", PROBES_DIR / f"{engine}_probe.py"):
        digest.update(script.name.encode())
        digest.update(script.read_bytes())
    return digest.hexdigest()[:16]


def released_versions(engine: str) -> list[str]:
    """Final releases on the index, read with pip's own client (``pip index versions``)."""
    completed = subprocess.run(
        [sys.executable, "-m", "pip", "index", "versions", engine, "--pre"],
        capture_output=True,
        text=True,
        check=True,
    )
    match = re.search(r"Available versions: (.*)", completed.stdout)
    if match is None:
        raise SystemExit(f"cannot read the releases of {engine}: {completed.stdout[-300:]}")
    versions = [Version(item.strip()) for item in match.group(1).split(",")]
    low, high = (Version(bound) for bound in RANGES[engine])
    return [str(v) for v in sorted(versions) if low <= v <= high and not v.is_prerelease and not v.is_devrelease]


def resolution_cutoff(release: Release) -> str | None:
    """Resolve as on the release's day (+2 days): a dependency left unbounded by the release
    (transformers, say) then gets the version its users got, not one that breaks its import.
    The same cut-off ``specprobe engines install`` takes (specprobe/engines/provision.py)."""
    from specprobe.engines.provision import resolution_cutoff as cutoff

    return cutoff(release.engine, release.version)


def plan(engines: Iterable[str]) -> list[Release]:
    """The first release of every line first, then the patch releases; engines taken in turn."""
    firsts: list[list[Release]] = []
    rest: list[list[Release]] = []
    for engine in engines:
        seen: set[str] = set()
        firsts.append([])
        rest.append([])
        for version in released_versions(engine):
            release = Release(engine, version)
            (rest[-1] if release.line in seen else firsts[-1]).append(release)
            seen.add(release.line)
    return [release for group in (firsts, rest) for release in _alternate(group)]


def _alternate(groups: list[list[Release]]) -> list[Release]:
    merged: list[Release] = []
    for index in range(max((len(group) for group in groups), default=0)):
        merged.extend(group[index] for group in groups if index < len(group))
    return merged


def raw_path(release: Release) -> Path:
    return RAW / release.engine / f"{release.version}.json"


def reply_is_current(record: dict[str, Any], digest: str) -> bool:
    """Made by the current probe, or by an earlier one whose reply the current probe would repeat."""
    made_by = record.get("probe_hash")
    if made_by == digest:
        return True
    if made_by not in COMPATIBLE_PROBES.get(str(record.get("engine")), set()):
        return False
    problems = (record.get("reply") or {}).get("problems") or []
    return not any(str(problem).startswith("algorithms:") for problem in problems)


def is_current(release: Release, digest: str) -> bool:
    try:
        record = json.loads(raw_path(release).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and reply_is_current(record, digest)


def uv_env() -> dict[str, str]:
    env = dict(os.environ)
    env.update({"UV_CACHE_DIR": str(UV_CACHE), "UV_LINK_MODE": "hardlink", "UV_NO_PROGRESS": "1"})
    return env


def folder_bytes(path: Path) -> int:
    """Bytes under ``path`` as ``du`` counts them (one measure with ``specprobe engines``)."""
    from specprobe.engines.provision import folder_bytes as measured

    return measured(path)


def free_bytes() -> int:
    return shutil.disk_usage(str(HOME_CACHE)).free


def requirement(release: Release) -> str:
    # SGLang's server code (sglang.srt) needs the srt extra in every release of the range.
    return f"sglang[srt]=={release.version}" if release.engine == "sglang" else f"vllm=={release.version}"


def log(message: str) -> None:
    sys.stderr.write(f"[{time.strftime('%H:%M:%S')}] {message}\n")
    sys.stderr.flush()


@contextlib.contextmanager
def install_lock() -> Iterator[None]:
    """One install at a time across workers (one per engine may run side by side; installs unpack
    gigabytes and must not run two at once on this shared machine)."""
    HOME_CACHE.mkdir(parents=True, exist_ok=True)
    with (HOME_CACHE / "snapshot-install.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def make_venv(venv: Path) -> Path:
    shutil.rmtree(venv, ignore_errors=True)
    subprocess.run(["uv", "venv", "-q", "--python", PYTHON, str(venv)], check=True, env=uv_env())
    return venv / "bin" / "python"


def install_full(release: Release, venv: Path, logfile: Path) -> tuple[Path, str]:
    python = make_venv(venv)
    cutoff = resolution_cutoff(release)
    # As on the release day first; a pin published later than that (vLLM 0.34.0's flashinfer-python
    # 0.7.3) needs today's index, where the release's exact pins still hold.
    for window in ([["--exclude-newer", cutoff]] if cutoff else []) + [[]]:
        with logfile.open("a", encoding="utf-8") as out:
            completed = subprocess.run(
                ["uv", "pip", "install", "--python", str(python), *window, requirement(release)],
                check=False,
                env=uv_env(),
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=INSTALL_TIMEOUT_S,
            )
        if completed.returncode == 0:
            how = "resolved as on its release day" if window else "resolved on today's index"
            return python, (
                f"uv pip install{' ' + ' '.join(window) if window else ''} {requirement(release)} "
                f"(own venv, the release's own pinned dependencies, {how})"
            )
    raise subprocess.CalledProcessError(completed.returncode, completed.args)


def overlay_base(release: Release) -> Path:
    """The venv whose dependencies an overlay borrows: the oldest newer release of the same engine
    installed in full (closest in time, so closest in what it imports), else the provisioned one."""
    candidates = []
    for marker in VENVS.glob(f"{release.engine}-*/.specprobe-installed"):
        version = marker.parent.name[len(release.engine) + 1 :]
        if " (overlay)" in marker.read_text(encoding="utf-8"):
            continue
        if Version(version) > Version(release.version):
            candidates.append((Version(version), marker.parent))
    if candidates:
        return min(candidates)[1]
    return HOME_CACHE / "engines" / OVERLAY_BASES[release.engine]


def purelib(python: Path) -> str:
    """The site-packages folder of ``python``'s environment."""
    return subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def install_overlay(release: Release, venv: Path, logfile: Path) -> tuple[Path, str]:
    """The release's package alone, over the site-packages of a provisioned venv of the same engine."""
    base = overlay_base(release)
    base_python = base / "bin" / "python"
    python = make_venv(venv)
    site, base_site = purelib(python), purelib(base_python)
    # Read after the venv's own site-packages, so this release's package shadows the base one.
    Path(site, "zz-specprobe-base.pth").write_text(base_site + "\n", encoding="utf-8")
    with logfile.open("a", encoding="utf-8") as out:
        subprocess.run(
            ["uv", "pip", "install", "--python", str(python), "--no-deps", f"{release.engine}=={release.version}"],
            check=True,
            env=uv_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=INSTALL_TIMEOUT_S,
        )
    return python, (
        f"uv pip install --no-deps {release.engine}=={release.version} over the dependencies of the "
        f"{base.name} venv (overlay)"
    )


def install_failure(logfile: Path) -> str | None:
    """The resolver's first reason from uv's log, on one line."""
    try:
        lines = logfile.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    causes = [line.strip().removeprefix("cause:").strip() for line in lines if line.strip().startswith("cause:")]
    errors = [line.strip() for line in lines if line.strip().startswith("error:")]
    text = (causes or errors or [""])[0]
    return " ".join(text.split())[:300] or None


def keep_sources(release: Release, python: Path) -> Path | None:
    """The release's own .py files, so source-read facts can be re-read without installing again."""
    package = "vllm" if release.engine == "vllm" else "sglang"
    located = subprocess.run(
        [
            str(python),
            "-I",
            "-c",
            f"import importlib.util as u; print(u.find_spec('{package}').submodule_search_locations[0])",
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    if not located:
        return None
    SOURCES.mkdir(parents=True, exist_ok=True)
    target = SOURCES / f"{release.name}.tar.gz"
    with tarfile.open(target, "w:gz") as archive:
        for path in sorted(Path(located).rglob("*.py")):
            archive.add(path, arcname=str(Path(package) / path.relative_to(located)))
    return target


def free_space(venv: Path) -> None:
    """Empty the uv cache and delete the venvs whose reply is kept (the caller holds the install lock)."""
    log(f"free disk {free_bytes() / 2**30:.1f} GiB: emptying the uv cache and the finished venvs")
    for old in VENVS.glob("*"):
        engine, _, version = old.name.partition("-")
        # A venv without a raw reply yet may be another worker's, mid-probe.
        if old != venv and raw_path(Release(engine, version)).is_file():
            shutil.rmtree(old, ignore_errors=True)
    subprocess.run(["uv", "cache", "clean"], env=uv_env(), check=False, capture_output=True)


def extract(release: Release, *, overlay: bool, keep_venv: bool) -> bool:
    from specprobe.engines import PROBES
    from specprobe.engines._probe import run_probe
    from specprobe.findings import SpecprobeError

    venv = VENVS / release.name
    logfile = HOME_CACHE / "snapshot-logs" / f"{release.name}.log"
    logfile.parent.mkdir(parents=True, exist_ok=True)
    if free_bytes() < MIN_FREE:
        with install_lock():
            # Checked again: another worker may have freed the space while this one waited.
            if free_bytes() < MIN_FREE:
                free_space(venv)
    cache_before = folder_bytes(UV_CACHE) if UV_CACHE.exists() else 0
    started = time.monotonic()
    python = venv / "bin" / "python"
    marker = venv / ".specprobe-installed"
    provisioned = HOME_CACHE / "engines" / release.name
    how: str
    if (provisioned / ".specprobe-ok").is_file() and not overlay:
        # Made by scripts/provision-engine.sh: the same full install, with pip.
        python = provisioned / "bin" / "python"
        how = f"pip install {release.engine}=={release.version} (own venv, the release's own pinned dependencies)"
        keep_venv = True
    elif marker.is_file():
        how = marker.read_text(encoding="utf-8").strip()
    else:
        try:
            with install_lock():
                python, how = (install_overlay if overlay else install_full)(release, venv, logfile)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            reason = install_failure(logfile) or type(exc).__name__
            if overlay:
                log(f"{release.name}: overlay install failed: {reason}")
                shutil.rmtree(venv, ignore_errors=True)
                return False
            # The release's own pins do not install here (e.g. a pinned wheel was deleted from the
            # index): fall back to the overlay and say why in the provenance.
            log(f"{release.name}: full install failed ({reason}); overlay instead")
            try:
                with install_lock():
                    python, how = install_overlay(release, venv, logfile)
            except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
                log(f"{release.name}: overlay install failed too; see {logfile}")
                shutil.rmtree(venv, ignore_errors=True)
                return False
            how = f"{how}; the full install failed: {reason}"
            overlay = True
        marker.write_text(how + "\n", encoding="utf-8")
    installed = time.monotonic()
    # The probe file as it is now (it may have changed since the run started).
    digest = probe_hash(release.engine)
    try:
        reply = run_probe(release.engine, PROBES[release.engine].probe_script, python, timeout_s=900)
    except SpecprobeError as exc:
        log(f"{release.name}: probe failed: {exc}")
        if " (overlay)" in how:
            # Another base may suit it better on the next run (a newer full install made meanwhile).
            shutil.rmtree(venv, ignore_errors=True)
        return False
    probed = time.monotonic()
    if " (overlay)" in how and any(str(problem).startswith("cli options") for problem in reply.get("problems") or []):
        # The borrowed dependencies do not fit this release's server code: not a snapshot of it.
        log(f"{release.name}: overlay probe could not read the options: {reply['problems'][0][:200]}")
        shutil.rmtree(venv, ignore_errors=True)
        return False
    sources = keep_sources(release, python)
    record: dict[str, Any] = {
        "engine": release.engine,
        "version": release.version,
        "probe_hash": digest,
        "installed_by": how,
        "overlay": overlay or " (overlay)" in how,
        "extracted_at": time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()),
        "figures": {
            "install_seconds": round(installed - started, 1),
            "probe_seconds": round(probed - installed, 1),
            "uv_cache_growth_bytes": max(0, folder_bytes(UV_CACHE) - cache_before),
            "venv_bytes": folder_bytes(venv),
        },
        "sources": str(sources) if sources else None,
        "reply": reply,
    }
    raw_path(release).parent.mkdir(parents=True, exist_ok=True)
    raw_path(release).write_text(json.dumps(record) + "\n", encoding="utf-8")
    if not keep_venv and venv.is_dir():
        shutil.rmtree(venv, ignore_errors=True)
        # The engine's own wheel is the one thing no other release shares (about 1.5 GB unpacked):
        # out of the cache with it; torch and the rest stay for the next release.
        with install_lock():
            subprocess.run(["uv", "cache", "clean", release.engine], env=uv_env(), check=False, capture_output=True)
    log(
        f"{release.name}: ok ({how.split(' (')[0]}; install {record['figures']['install_seconds']} s, "
        f"probe {record['figures']['probe_seconds']} s, problems: {len(reply.get('problems') or [])})"
    )
    return True


def refresh_source_facts(record: dict[str, Any], digest: str) -> bool:
    """Re-read the source-read facts of ``record`` from its kept sources with the current probe code."""
    import importlib.util
    import tempfile

    from specprobe.engines._probe import PROBES_DIR

    sources = record.get("sources")
    if not sources or not Path(sources).is_file():
        return False
    engine = record["engine"]
    sys.path.insert(0, str(PROBES_DIR))
    try:
        import _common  # the probes' own helper module, loaded by path like the probes do

        spec = importlib.util.spec_from_file_location(f"{engine}_probe", PROBES_DIR / f"{engine}_probe.py")
        with tempfile.TemporaryDirectory() as folder:
            with tarfile.open(sources) as archive:
                archive.extractall(folder, filter="data")
            original = _common.package_file

            def in_sources(package: str, *parts: str) -> Path | None:
                candidate = Path(folder, package, *parts)
                return candidate if candidate.is_file() else None

            _common.package_file = in_sources
            try:
                reply = record["reply"]
                tree = _common.parse_file(
                    in_sources(
                        engine,
                        *(
                            ("model_executor", "models", "llama_eagle3.py")
                            if engine == "vllm"
                            else ("srt", "models", "llama_eagle3.py")
                        ),
                    )
                )
                reply["eagle3_fc_inputs"] = _common.eagle3_fc_inputs(tree)
                reply["eagle3_layer_prefixes"] = _common.eagle3_layer_prefixes(tree)
                if engine == "vllm" and spec is not None and spec.loader is not None:
                    module = importlib.util.module_from_spec(spec)
                    spec.loader.exec_module(module)
                    problems: list[str] = []
                    reply["cpu_attention_head_sizes"] = module.extract_cpu_head_sizes(problems)
            finally:
                _common.package_file = original
    finally:
        sys.path.remove(str(PROBES_DIR))
    record["refreshed_from"] = record["probe_hash"]
    record["probe_hash"] = digest
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=["plan", "extract", "refresh", "build"])
    parser.add_argument("--engine", choices=sorted(RANGES), action="append")
    parser.add_argument("--only", help="comma-separated versions")
    parser.add_argument("--limit", type=int, help="stop after this many installs")
    parser.add_argument(
        "--newest-first",
        action="store_true",
        help="newest releases first (old ones that need the overlay then find a close full install to borrow)",
    )
    parser.add_argument("--overlay", action="store_true", help="overlay install (see the module docstring)")
    parser.add_argument(
        "--keep-venv",
        action="store_true",
        help="keep each venv after extraction (else deleted, and the engine's wheel dropped from the cache)",
    )
    args = parser.parse_args(argv)
    engines = args.engine or sorted(RANGES, reverse=True)
    if args.action == "refresh":
        for engine in engines:
            digest = probe_hash(engine)
            for path in sorted((RAW / engine).glob("*.json")):
                record = json.loads(path.read_text(encoding="utf-8"))
                if record.get("probe_hash") in SOURCE_ONLY_CHANGES.get(engine, set()) and refresh_source_facts(
                    record, digest
                ):
                    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
                    sys.stdout.write(f"{engine} {record['version']}: source facts re-read\n")
        return 0
    if args.action == "build":
        from specprobe.schema.snapshot import build_from_raw

        hashes = {engine: probe_hash(engine) for engine in engines}
        for line in build_from_raw(
            RAW, engines, accept=lambda record: reply_is_current(record, hashes[str(record.get("engine"))])
        ):
            sys.stdout.write(line + "\n")
        return 0
    releases = plan(engines)
    if args.newest_first:
        # Still every line's first release before the patch releases.
        firsts = {
            release
            for index, release in enumerate(releases)
            if release.line not in {other.line for other in releases[:index] if other.engine == release.engine}
        }
        releases.sort(key=lambda release: (release in firsts, Version(release.version)), reverse=True)
    if args.only:
        wanted = set(args.only.split(","))
        releases = [release for release in releases if release.version in wanted]
    digests = {engine: probe_hash(engine) for engine in RANGES}
    if args.action == "plan":
        for release in releases:
            state = "done" if is_current(release, digests[release.engine]) else "todo"
            sys.stdout.write(f"{release.engine} {release.version} {state}\n")
        return 0
    done = 0
    for release in releases:
        if is_current(release, digests[release.engine]):
            continue
        if args.limit is not None and done >= args.limit:
            break
        with claim(release) as mine:
            # Another worker (one per engine and direction may run) has this release.
            if not mine or is_current(release, digests[release.engine]):
                continue
            log(f"{release.name}: installing")
            extract(release, overlay=args.overlay, keep_venv=args.keep_venv)
        done += 1
    return 0


@contextlib.contextmanager
def claim(release: Release) -> Iterator[bool]:
    """A per-release lock, taken without waiting: True when this worker got it."""
    folder = HOME_CACHE / "snapshot-claims"
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{release.name}.lock").open("w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


if __name__ == "__main__":
    sys.exit(main())
