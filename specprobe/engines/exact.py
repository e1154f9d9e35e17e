"""Exact mode (`--exact`): ask the engine release itself whether it builds and loads this drafter.

For each case (a drafter folder, its target's config.json, the speculative settings) the release's own
code runs in the release's own interpreter (``probes/vllm_exact.py``, ``probes/sglang_exact.py``): it
builds its engine config,
resolves and constructs the draft class on the meta device, and feeds the checkpoint's tensor names and
shapes, read here from the safetensors headers, through the model's own ``load_weights`` as meta
tensors. Nothing of the user's folders is handed over: the engine reads copies of the two config.json
files in a temporary folder of specprobe's own, no tensor data is read, and trust_remote_code is never
set. The probe's reply becomes findings (``specprobe.rules.exact``); a reply that is not what the
probe writes is an error of the run (exit 2), never a pass.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.version import InvalidVersion, Version

from specprobe.engines._probe import (
    PROBES_DIR,
    Interpreter,
    Purpose,
    find_interpreters,
    release_of,
    run_probe,
    vllm_cache_root,
)
from specprobe.engines._probe import shorten as shorten_message
from specprobe.findings import SpecprobeError

if TYPE_CHECKING:
    # Only for the annotation: engines/ is a layer under checkpoint/; exact mode reads the Checkpoint it is given.
    from specprobe.checkpoint.folder import Checkpoint

PROBE = PROBES_DIR / "vllm_exact.py"
PROBES = {"vllm": PROBE, "sglang": PROBES_DIR / "sglang_exact.py"}
DEFAULT_TIMEOUT_S = 900.0
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
}
# Where engines, torch, FlashInfer and humming keep caches: a temporary folder of specprobe's, never the user's.
_CACHES = (
    "XDG_CACHE_HOME", "HF_HOME", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "FLASHINFER_WORKSPACE_BASE",
    "HUMMING_TMP_DIR", "HUMMING_CACHE_DIR",
)
# The deployment settings handed to SGLang's ServerArgs in exact mode (the rest stay at the engine's defaults).
SGLANG_SERVER_ARGS = ("context_length", "dtype", "quantization", "speculative_num_steps", "speculative_eagle_topk",
                      "speculative_num_draft_tokens", "speculative_token_map", "kv_cache_dtype")
_MESSAGE_LIMIT = 600


@dataclass(frozen=True)
class ExactCase:
    """One drafter, its target and the speculative settings, as the probe is asked about them."""

    id: str
    draft_config: Mapping[str, Any]
    target_config: Mapping[str, Any]
    tensors: Sequence[tuple[str, str, tuple[int, ...]]]
    speculative: Mapping[str, Any] = field(default_factory=dict)
    tensor_files: Mapping[str, str] = field(default_factory=dict)
    # SGLang: ServerArgs fields of the deployment (--context-length ...) and its SGLANG_* environment.
    server_args: Mapping[str, Any] = field(default_factory=dict)
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass
class ExactRun:
    """The probe's reply for a set of cases, with the interpreter and wall time."""

    version: str | None
    interpreter: str
    seconds: float
    cases: dict[str, dict[str, Any]]
    import_seconds: float | None = None


def case_from_checkpoint(
    case_id: str,
    checkpoint: Checkpoint,
    target_config: Mapping[str, Any],
    *,
    method: str | None = None,
    speculative: Mapping[str, Any] | None = None,
    server_args: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
) -> ExactCase:
    """A case from a loaded drafter folder: its config.json and the names, dtypes and shapes of its headers."""
    if checkpoint.config_raw is None:
        raise SpecprobeError(f"{checkpoint.root}: no readable config.json for exact mode")
    settings: dict[str, Any] = {"method": method or "eagle3", "num_speculative_tokens": 3}
    settings.update({key: value for key, value in (speculative or {}).items() if key != "model"})
    tensors = [(name, info.dtype, tuple(int(size) for size in info.shape)) for name, info in checkpoint.tensors.items()]
    files = {name: info.file for name, info in checkpoint.tensors.items()}
    return ExactCase(case_id, dict(checkpoint.config_raw), dict(target_config), tensors, settings, files,
                     dict(server_args or {}), dict(env or {}))


def build_request(cases: Sequence[ExactCase], workdir: Path) -> dict[str, Any]:
    """The probe's request; the two config.json of each case are copied under ``workdir`` (specprobe's own)."""
    request_cases = []
    for index, case in enumerate(cases):
        folder = workdir / f"case-{index}"
        draft, target = folder / "draft", folder / "target"
        for path, config in ((draft, case.draft_config), (target, case.target_config)):
            path.mkdir(parents=True, exist_ok=True)
            (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
        settings = dict(case.speculative)
        settings["model"] = str(draft)
        request_cases.append(
            {
                "id": case.id,
                "target": str(target),
                "draft": str(draft),
                "speculative_config": settings,
                "tensors": [[name, dtype, list(shape)] for name, dtype, shape in case.tensors],
                "server_args": dict(case.server_args),
                "env": dict(case.env),
            }
        )
    return {"cases": request_cases}


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise SpecprobeError(f"the exact-mode probe's reply is malformed ({what})")


def validate_reply(reply: Any, ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The per-case replies, keyed by id; anything unexpected is a SpecprobeError (exit 2, never a pass)."""
    _expect(isinstance(reply, dict), "not an object")
    if reply.get("error"):
        raise SpecprobeError(
            f"the exact-mode probe refused the request: {str(reply.get('message') or reply['error'])[:200]}"
        )
    cases = reply.get("cases")
    _expect(isinstance(cases, list), "no case list")
    by_id: dict[str, dict[str, Any]] = {}
    for item in cases:
        _expect(isinstance(item, dict) and isinstance(item.get("id"), str), "a case without an id")
        _expect(isinstance(item.get("ok"), bool) and isinstance(item.get("stage"), str), "a case without ok/stage")
        for key in ("unconsumed", "unloaded"):
            value = item.get(key)
            _expect(value is None or (isinstance(value, list) and all(isinstance(v, str) for v in value)), key)
        for key in ("resolved", "error"):
            _expect(item.get(key) is None or isinstance(item.get(key), dict), key)
        padded = item.get("padded")
        _expect(padded is None or (isinstance(padded, list) and all(isinstance(p, dict) for p in padded)), "padded")
        refusals = item.get("launch_refusals")
        _expect(refusals is None or (isinstance(refusals, list) and all(
            isinstance(r, dict) and isinstance(r.get("variable"), str) and isinstance(r.get("error"), dict)
            for r in refusals)), "launch_refusals")
        _expect(item["ok"] or bool(item.get("error")) or bool(item.get("unsupported")), "a failed case with no reason")
        _expect(
            not item["ok"] or (item.get("unconsumed") is not None and item.get("unloaded") is not None),
            "a passed case without its load record",
        )
        by_id[item["id"]] = item
    missing = [case_id for case_id in ids if case_id not in by_id]
    _expect(not missing, f"no reply for {', '.join(missing)}")
    return by_id


def run_cases(
    cases: Sequence[ExactCase], interpreter: Interpreter, *, timeout_s: float = DEFAULT_TIMEOUT_S,
    engine: str = "vllm",
) -> ExactRun:
    """All cases in one probe process (one engine import) of ``engine`` (vllm or sglang)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="specprobe-exact-") as folder:
        request = build_request(cases, Path(folder))
        env = dict(OFFLINE_ENV)
        # Engines and the libraries they import keep caches and locks under the home folder (humming's
        # ~/.humming, FlashInfer's and torch's ~/.cache): for the probe, home and caches are specprobe's
        # temporary folder, never the user's.
        home = Path(folder) / "home"
        home.mkdir()
        env["HOME"] = str(home)
        env.update({name: str(Path(folder) / "cache" / name.lower()) for name in _CACHES})
        if engine != "sglang":  # the SGLang probe drops inherited SGLANG_* and sets each case's own
            # vLLM reads its variables once per process: the callers group cases by their deployment's VLLM_*.
            for case in cases:
                env.update({key: str(value) for key, value in case.env.items() if key.startswith("VLLM_")})
            env["VLLM_CACHE_ROOT"] = str(vllm_cache_root(interpreter.path) or Path(folder) / "vllm-cache")
        reply = run_probe(
            engine, PROBES[engine], interpreter.path, timeout_s=timeout_s, env_overrides=env,
            input_text=json.dumps(request),
        )
    by_id = validate_reply(reply, [case.id for case in cases])
    version = reply.get("version")
    return ExactRun(
        version=str(version) if version else None,
        interpreter=str(interpreter.path),
        seconds=time.monotonic() - started,
        cases=by_id,
        import_seconds=reply.get("import_seconds") if isinstance(reply.get("import_seconds"), (int, float)) else None,
    )


def shorten(message: str) -> str:
    """The engine's message as exact-mode findings quote it (shorter than the dry run's)."""
    return shorten_message(message, _MESSAGE_LIMIT)


def captured_layers(ids: Sequence[Any], layers: int | None) -> tuple[list[int], list[Any]]:
    """The target layer indices a forward pass captures for ``ids``, and the ids it never reaches.

    The target tests ``layer_index in ids`` once per layer boundary (0 before the first layer through
    ``layers`` after the last; releases differ by one at the top, so ``layers`` itself counts as reached):
    duplicates capture once, strings and negative or larger ids never; 1.0 and True equal 1.
    """
    numbers = [i for i in ids if isinstance(i, (int, float))]
    top = layers if layers is not None else int(max(numbers, default=0))
    captured = [index for index in range(top + 1) if index in ids]
    never = [i for i in ids if not any(i == index for index in captured)]
    return captured, never


def exact_interpreters(engine: str, version: str) -> list[Interpreter]:
    """The engine cache's venvs of that exact release, then SPECPROBE_VLLM_CPU_PYTHON / SPECPROBE_VLLM_PYTHON
    (a venv of another release is not used: the reply's version is checked)."""
    return find_interpreters(engine, Purpose.EXACT, version=version)


def same_release(reported: str | None, wanted: str) -> bool:
    base = release_of(reported)
    try:
        return base is not None and Version(base) == Version(Version(wanted).base_version)
    except InvalidVersion:
        return False
