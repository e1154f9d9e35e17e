"""Exact mode (`--exact`): ask the engine release itself whether it builds and loads this drafter.

For each case (a drafter folder, its target's config.json, the speculative settings) the release's own
code runs in the release's own interpreter (``probes/vllm_exact.py``): it builds its engine config,
resolves and constructs the draft class on the meta device, and feeds the checkpoint's tensor names and
shapes, read here from the safetensors headers, through the model's own ``load_weights`` as meta
tensors. Nothing of the user's folders is handed over: the engine reads copies of the two config.json
files in a temporary folder of specprobe's own, no tensor data is read, and trust_remote_code is never
set. The probe's reply becomes findings (``specprobe.rules.exact``); a reply that is not what the
probe writes is an error of the run (exit 2), never a pass.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import InvalidVersion, Version

from specprobe.checkpoint.folder import Checkpoint
from specprobe.engines._probe import PROBES_DIR, Interpreter, release_interpreters, run_probe
from specprobe.findings import Finding, Severity, SpecprobeError
from specprobe.rules import exact as rules

PROBE = PROBES_DIR / "vllm_exact.py"
DEFAULT_TIMEOUT_S = 900.0
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "DO_NOT_TRACK": "1",
    "VLLM_CPU_KVCACHE_SPACE": "1",
}
_SOURCE = "https://github.com/vllm-project/vllm/blob/v{version}/{file}#L{line}"
_MESSAGE_LIMIT = 600
_LONG_LIST = re.compile(r"(dict_keys\()?\[(?:'[^']*', ){11,}'[^']*'\]\)?")
# Tensors a release's EAGLE-3 loader skips by design: vLLM keeps only d2t, never t2d.
_SKIPPED_BY_DESIGN = frozenset({"t2d"})
_LIST_LIMIT = 8


@dataclass(frozen=True)
class ExactCase:
    """One drafter, its target and the speculative settings, as the probe is asked about them."""

    id: str
    draft_config: Mapping[str, Any]
    target_config: Mapping[str, Any]
    tensors: Sequence[tuple[str, str, tuple[int, ...]]]
    speculative: Mapping[str, Any] = field(default_factory=dict)
    tensor_files: Mapping[str, str] = field(default_factory=dict)


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
) -> ExactCase:
    """A case from a loaded drafter folder: its config.json and the names, dtypes and shapes of its headers."""
    if checkpoint.config_raw is None:
        raise SpecprobeError(f"{checkpoint.root}: no readable config.json for exact mode")
    settings: dict[str, Any] = {"method": method or "eagle3", "num_speculative_tokens": 3}
    settings.update({key: value for key, value in (speculative or {}).items() if key != "model"})
    tensors = [(name, info.dtype, tuple(int(size) for size in info.shape)) for name, info in checkpoint.tensors.items()]
    files = {name: info.file for name, info in checkpoint.tensors.items()}
    return ExactCase(case_id, dict(checkpoint.config_raw), dict(target_config), tensors, settings, files)


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
        _expect(item["ok"] or bool(item.get("error")) or bool(item.get("unsupported")), "a failed case with no reason")
        _expect(
            not item["ok"] or (item.get("unconsumed") is not None and item.get("unloaded") is not None),
            "a passed case without its load record",
        )
        by_id[item["id"]] = item
    missing = [case_id for case_id in ids if case_id not in by_id]
    _expect(not missing, f"no reply for {', '.join(missing)}")
    return by_id


def _engine_cache(interpreter: Interpreter) -> Path | None:
    """The engine's own cache folder for a release of the engine cache: inside its venv (removed with it).

    vLLM inspects each model class it has not seen in a subprocess that imports vLLM again (~20 s here)
    and keeps the answer under VLLM_CACHE_ROOT; a cache that lives with the venv pays that once per class,
    and never touches the user's own ~/.cache/vllm. Other interpreters get a temporary folder."""
    from specprobe.engines.provision import engines_dir

    venv = interpreter.path.parent.parent
    try:
        inside = venv.resolve().parent == engines_dir().resolve()
    except OSError:
        return None
    return venv / ".specprobe-vllm-cache" if inside else None


def run_cases(
    cases: Sequence[ExactCase], interpreter: Interpreter, *, timeout_s: float = DEFAULT_TIMEOUT_S
) -> ExactRun:
    """All cases in one probe process (one engine import)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="specprobe-exact-") as folder:
        request = build_request(cases, Path(folder))
        env = dict(OFFLINE_ENV)
        env["VLLM_CACHE_ROOT"] = str(_engine_cache(interpreter) or Path(folder) / "vllm-cache")
        reply = run_probe(
            "vllm", PROBE, interpreter.path, timeout_s=timeout_s, env_overrides=env, input_text=json.dumps(request)
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
    """The engine's message with registry-sized lists folded and its length bounded."""
    folded = _LONG_LIST.sub(lambda match: f"[{match.group(0).count(', ') + 1} names]", str(message))
    folded = " ".join(folded.split())
    return folded if len(folded) <= _MESSAGE_LIMIT else folded[: _MESSAGE_LIMIT - 1] + "…"


def release_of(version: str | None) -> str | None:
    try:
        return Version(version).base_version if version else None
    except InvalidVersion:
        return None


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_LIST_LIMIT])
    return shown + (f" and {len(names) - _LIST_LIMIT} more" if len(names) > _LIST_LIMIT else "")


def _where(error: Mapping[str, Any], version: str | None) -> tuple[str, list[str]]:
    frame = error.get("frame") if isinstance(error.get("frame"), dict) else None
    if not frame or not isinstance(frame.get("file"), str) or not isinstance(frame.get("line"), int):
        return "", []
    text = f" ({frame['file']}:{frame['line']}"
    text += f", {frame['function']})" if isinstance(frame.get("function"), str) else ")"
    release = release_of(version)
    links = [_SOURCE.format(version=release, file=frame["file"], line=frame["line"])] if release else []
    return text, links


_REFUSALS = {
    "config": (rules.CONFIG_REFUSED, "refused to build its configuration"),
    "load": (rules.LOAD_REFUSED, "refused the checkpoint while loading it"),
}


def findings_for(case: ExactCase, reply: Mapping[str, Any], version: str | None) -> list[Finding]:
    """The findings of one case's reply (pure: unit-tested without an engine)."""
    label = f"vLLM {version or '?'}"
    found: list[Finding] = []
    resolved: Mapping[str, Any] = reply["resolved"] if isinstance(reply.get("resolved"), dict) else {}
    if reply.get("stage") == "unsupported" or reply.get("unsupported"):
        found.append(
            rules.UNAVAILABLE.finding(
                f"exact mode unsupported for {label}: {shorten(str(reply.get('unsupported')))}; "
                "the verdict for it is static",
            )
        )
        return found
    error = reply.get("error")
    if not reply.get("ok"):
        error = error if isinstance(error, dict) else {}
        stage = str(reply.get("stage"))
        rule, what = _REFUSALS.get(stage, (rules.BUILD_REFUSED, f"failed to construct the draft model ({stage})"))
        where, links = _where(error, version)
        tensor = error.get("tensor") if isinstance(error.get("tensor"), str) else None
        parameter = error.get("parameter") if isinstance(error.get("parameter"), str) else None
        about = f" at tensor {tensor} -> parameter {parameter}" if tensor and parameter else ""
        message = (
            f"{label} {what}{about}: {error.get('type', 'Error')}: {shorten(str(error.get('message', '')))}{where}"
        )
        location = f"{case.tensor_files.get(tensor, 'model.safetensors')}:{tensor}" if tensor else "config.json"
        found.append(rule.finding(message, location=location, evidence=links))
        if resolved.get("draft_class"):
            found.append(rules.RESOLVED.finding(f"{label} resolved the draft class {resolved['draft_class']}"))
        return found
    unconsumed = [name for name in reply.get("unconsumed") or [] if name not in _SKIPPED_BY_DESIGN]
    unloaded = list(reply.get("unloaded") or [])
    vocab = resolved.get("draft_vocab_size")
    target_vocab = resolved.get("target_vocab_size")
    d2t_unloaded = any(name.endswith("draft_id_to_target_id") for name in unloaded)
    # All-zero offsets are the identity map: harmless over the full vocabulary (0.18.0 always allocates
    # the parameter), wrong for a reduced one.
    if d2t_unloaded and vocab != target_vocab:
        found.append(
            rules.DEFAULTS.finding(
                f"{label}: the checkpoint has no d2t, so draft_id_to_target_id stays all zeros: draft token i is "
                f"taken as target token i for a draft vocabulary of {vocab} out of {target_vocab}",
                location="model.safetensors:d2t",
                severity=Severity.ERROR,
                hint="ship d2t (and t2d) from training; a reduced vocabulary needs its map",
            )
        )
    shared_embed = resolved.get("has_own_embed_tokens") is False and (
        resolved.get("draft_hidden_size") in (None, resolved.get("target_hidden_size"))
    )
    shared_head = resolved.get("has_own_lm_head") is False
    left = [
        name
        for name in unloaded
        if not name.endswith("draft_id_to_target_id")
        and not (shared_embed and "embed_tokens" in name)
        and not (shared_head and "lm_head" in name)
    ]
    draft_hidden, target_hidden = resolved.get("draft_hidden_size"), resolved.get("target_hidden_size")
    if resolved.get("has_own_embed_tokens") is False and not shared_embed:
        found.append(
            rules.UNLOADED.finding(
                f"{label}: the checkpoint has no embed_tokens and the draft's hidden size {draft_hidden} differs from "
                f"the target's {target_hidden}: the target's embedding does not fit the draft (releases that check "
                "the width keep the draft's own, uninitialised; earlier ones hand it the target's)",
                location="model.safetensors:embed_tokens.weight",
                hint="ship the drafter's embed_tokens",
            )
        )
        left = [name for name in left if "embed_tokens" not in name]
    if shared_head and isinstance(vocab, int) and isinstance(target_vocab, int) and vocab != target_vocab:
        found.append(
            rules.UNLOADED.finding(
                f"{label}: the checkpoint has no lm_head, so the draft takes the target's lm_head "
                f"({target_vocab} rows) for a draft vocabulary of {vocab}",
                location="model.safetensors:lm_head.weight",
                hint="ship the drafter's trained lm_head",
            )
        )
    if left:
        found.append(
            rules.UNLOADED.finding(
                f"{label} loaded no checkpoint tensor into {len(left)} parameter(s) of "
                f"{str(resolved.get('draft_class', 'the draft model')).rsplit('.', 1)[-1]}: {_names(left)}; "
                "they keep their initial values when served",
                location="model.safetensors",
            )
        )
    overwritten = [item for item in reply.get("overwritten") or [] if isinstance(item, list) and len(item) == 3]
    if overwritten:
        pairs = [f"{param} <- {first} then {second}" for param, first, second in overwritten[:_LIST_LIMIT]]
        found.append(
            rules.UNCONSUMED.finding(
                f"{label} loaded {len(overwritten)} parameter(s) twice from different checkpoint tensors; the later "
                f"one silently wins: {'; '.join(pairs)}",
                location=f"{case.tensor_files.get(str(overwritten[0][1]), 'model.safetensors')}:{overwritten[0][1]}",
                hint="keep one naming of each tensor",
            )
        )
    if unconsumed:
        found.append(
            rules.UNCONSUMED.finding(
                f"{label}'s load_weights used none of these checkpoint tensors: {_names(unconsumed)}",
                location=f"{case.tensor_files.get(unconsumed[0], 'model.safetensors')}:{unconsumed[0]}",
            )
        )
    ids = resolved.get("aux_layer_ids")
    use_aux = resolved.get("use_aux_hidden_state")
    if use_aux and resolved.get("aux_source") == "target default" and isinstance(ids, list):
        found.append(
            rules.DEFAULTS.finding(
                f"{label}: the drafter's config names no aux layer ids, so the target's default layers {ids} are "
                "captured; if the drafter was trained on other layers, acceptance collapses",
                location="config.json:eagle_aux_hidden_state_layer_ids",
            )
        )
    fc_in, hidden = resolved.get("fc_in_features"), resolved.get("target_hidden_size")
    layers = resolved.get("target_layers")
    if use_aux and isinstance(ids, list) and isinstance(fc_in, int) and isinstance(hidden, int):
        captured, never = captured_layers(ids, layers if isinstance(layers, int) else None)
        if len(captured) * hidden != fc_in:
            unreached = f"; {never} are never reached by the target's {layers} layers" if never else ""
            found.append(
                rules.AUX_FC_MISMATCH.finding(
                    f"{label} captures {len(captured)} hidden states (aux layer ids {ids}, from the "
                    f"{resolved.get('aux_source')}{unreached}) of width {hidden} = {len(captured) * hidden} "
                    f"features, but built fc for {fc_in} ({resolved.get('num_aux_hidden_states')} aux hidden states)",
                    location="config.json:eagle_aux_hidden_state_layer_ids",
                )
            )
    found.append(rules.RESOLVED.finding(_resolved_text(label, resolved, reply)))
    return found


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


def _resolved_text(label: str, resolved: Mapping[str, Any], reply: Mapping[str, Any]) -> str:
    parts = [
        f"{label} builds {str(resolved.get('draft_class', '?')).rsplit('.', 1)[-1]}"
        f" for {resolved.get('draft_architecture')}"
    ]
    if resolved.get("fc_in_features") is not None:
        parts.append(
            f"fc {resolved.get('fc_out_features')}x{resolved.get('fc_in_features')} for "
            f"{resolved.get('num_aux_hidden_states')} aux hidden states"
        )
    if resolved.get("aux_layer_ids") is not None:
        parts.append(f"aux layer ids {resolved.get('aux_layer_ids')} (from the {resolved.get('aux_source')})")
    parts.append(f"draft vocab {resolved.get('draft_vocab_size')} of {resolved.get('target_vocab_size')}")
    embed = resolved.get("has_own_embed_tokens")
    head = resolved.get("has_own_lm_head")
    parts.append("own embed_tokens" if embed else "embed_tokens shared with the target")
    parts.append("own lm_head" if head else "lm_head shared with the target")
    skipped = [name for name in reply.get("unconsumed") or [] if name in _SKIPPED_BY_DESIGN]
    if skipped:
        parts.append(f"{', '.join(skipped)} not used by this release (by design)")
    return "; ".join(parts) + "; the checkpoint's header shapes loaded without a refusal"


def exact_interpreters(engine: str, version: str) -> list[Interpreter]:
    """The engine cache's venvs of that exact release, then SPECPROBE_VLLM_CPU_PYTHON / SPECPROBE_VLLM_PYTHON
    (a venv of another release is not used: the reply's version is checked)."""
    found = release_interpreters(engine, version)
    for variable in (f"SPECPROBE_{engine.upper()}_CPU_PYTHON", f"SPECPROBE_{engine.upper()}_PYTHON"):
        value = os.environ.get(variable)
        if value and Path(value).exists():
            found.append(Interpreter(Path(value), variable))
    return found


def same_release(reported: str | None, wanted: str) -> bool:
    base = release_of(reported)
    try:
        return base is not None and Version(base) == Version(Version(wanted).base_version)
    except InvalidVersion:
        return False


def _target_raw(spec: str | None) -> dict[str, Any] | None:
    from specprobe.hfconfig import ConfigError, load_config_json, resolve_config_path

    if not spec:
        return None
    try:
        return load_config_json(resolve_config_path(spec))
    except ConfigError:
        return None


def check_exact(ctx: Any, report: Any, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """``check --exact``: run the drafter of ``ctx`` (a CheckContext) through every vLLM release it is
    judged for whose interpreter is cached here; the others (and SGLang) say their verdict is static.

    Adds findings to ``report`` and ``report.extra["exact"]`` (per release: exact or static, and why).
    """
    summary: list[dict[str, Any]] = []
    report.extra["exact"] = summary
    target = _target_raw(ctx.target_spec)
    for engine, version in ctx.engines:
        entry: dict[str, Any] = {"engine": engine, "version": version, "verdict": "static"}
        summary.append(entry)
        if engine == "sglang":
            report.add(sglang_static(version))
            entry["why"] = "SGLang's draft classes are not constructed here"
            continue
        if target is None:
            entry["why"] = "no target config.json (--target)"
            report.add(
                rules.UNAVAILABLE.finding(
                    f"exact mode for vLLM {version} needs the target's config.json (--target DIR|HUB_ID); the verdict "
                    "for it is static",
                    hint="pass --target",
                )
            )
            continue
        if ctx.checkpoint.config_raw is None or not ctx.checkpoint.tensors:
            entry["why"] = "no config.json or no safetensors tensors in the drafter"
            report.add(
                rules.UNAVAILABLE.finding(
                    f"exact mode for vLLM {version} needs the drafter's config.json and safetensors headers; the "
                    "verdict for it is static"
                )
            )
            continue
        interpreters = exact_interpreters(engine, version)
        if not interpreters:
            entry["why"] = "release not installed in the engine cache"
            report.add(
                rules.UNAVAILABLE.finding(
                    f"no interpreter of vLLM {version} here; the verdict for it is static",
                    hint=f"specprobe engines install vllm=={version}",
                )
            )
            continue
        case = case_from_checkpoint("draft", ctx.checkpoint, target, method=ctx.method)
        run = run_cases([case], interpreters[0], timeout_s=timeout_s)
        entry.update({"interpreter": run.interpreter, "seconds": round(run.seconds, 1), "reported": run.version})
        if not same_release(run.version, version):
            entry["why"] = f"the interpreter has vLLM {run.version}, not {version}"
            report.add(
                rules.UNAVAILABLE.finding(
                    f"{interpreters[0].how} ({run.interpreter}) runs vLLM {run.version}, not {version}; "
                    f"the verdict for {version} is static",
                    hint=f"specprobe engines install vllm=={version}",
                )
            )
            continue
        reply = run.cases["draft"]
        if reply.get("stage") != "unsupported":
            entry["verdict"] = "exact"
        else:
            entry["why"] = str(reply.get("unsupported"))
        report.extend(findings_for(case, reply, run.version))


def sglang_static(version: str) -> Finding:
    """SGLang: its draft classes need its CUDA kernel package to import; the verdict is static."""
    from specprobe.engines.provision import cached_python

    python = cached_python("sglang", version)
    why = "no interpreter of this release in the engine cache"
    if python is not None:
        # The import takes ~50 s here and a cached venv does not change: its answer is kept beside it.
        kept = python.parent.parent / ".specprobe-sglang-import"
        try:
            failure = kept.read_text(encoding="utf-8").strip() if kept.is_file() else None
        except OSError:
            failure = None
        if failure is None:
            failure = sglang_import_failure(python) or ""
            with contextlib.suppress(OSError):
                kept.write_text(failure + "\n", encoding="utf-8")
        why = failure or "its EAGLE-3 draft module imports here, but exact mode does not construct SGLang's classes yet"
    return rules.SGLANG_STATIC.finding(f"SGLang {version}: {why}; the verdict for it is static")


def sglang_import_failure(python: Path, timeout_s: float = 300.0) -> str | None:
    """The last line of the error importing SGLang's EAGLE-3 draft module under ``python`` (None: it imports)."""
    import subprocess

    code = "import sglang.srt.models.llama_eagle3"
    try:
        completed = subprocess.run(
            [str(python), "-I", "-B", "-c", code],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**os.environ, **OFFLINE_ENV},
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"importing sglang.srt.models.llama_eagle3 failed: {type(exc).__name__}"
    if completed.returncode == 0:
        return None
    lines = [line.strip() for line in completed.stderr.splitlines() if line.strip()]
    return "importing sglang.srt.models.llama_eagle3 failed: " + shorten(lines[-1] if lines else "no output")


def exact_for_deployments(report: Any, deployments: Sequence[Any], engine: Any = None,
                          *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """``lint --exact`` / ``gate --exact``: each deployment's drafter, target and speculative settings through
    its vLLM release's own code; one probe process per release. Findings are placed on the deployment."""
    from specprobe.checkpoint.folder import load_checkpoint
    from specprobe.deploy.engines import resolve_engine_version
    from specprobe.gate import resolve_model
    from specprobe.hfconfig import ConfigError, load_config_json

    summary: list[dict[str, Any]] = report.extra.setdefault("exact", [])
    pending: dict[str, list[tuple[Any, ExactCase]]] = {}

    def note(deployment: Any, finding: Finding, entry: dict[str, Any]) -> None:
        summary.append(entry)
        report.add(deployment.locate(finding, "draft", "speculative", "command"))

    for index, deployment in enumerate(deployments):
        if deployment.command is None or deployment.engine_name is None or not deployment.draft:
            continue
        resolve_engine_version(deployment, engine)
        version = deployment.engine.version if deployment.engine is not None else None
        entry: dict[str, Any] = {"deployment": deployment.name, "engine": deployment.engine_name,
                                 "version": str(version) if version else None, "verdict": "static"}
        if deployment.engine_name == "sglang":
            entry["why"] = "SGLang's draft classes are not constructed here"
            note(deployment, sglang_static(str(version)), entry)
            continue
        draft = resolve_model(deployment, deployment.draft, "draft")
        target = resolve_model(deployment, deployment.target, "target")
        missing = [ref for ref in (draft, target) if ref is None or ref.folder is None]
        if version is None or missing:
            why = "no engine version" if version is None else "; ".join(
                (ref.why_not or ref.spec) if ref is not None else "no target" for ref in missing)
            entry["why"] = why
            note(deployment, rules.UNAVAILABLE.finding(f"exact mode did not run: {why}; the verdict is static"), entry)
            continue
        assert draft is not None and target is not None and draft.folder is not None and target.folder is not None
        try:
            checkpoint = load_checkpoint(draft.folder)
            target_config = load_config_json(target.folder / "config.json")
        except (OSError, ConfigError) as exc:
            entry["why"] = f"unreadable: {exc}"
            note(deployment, rules.UNAVAILABLE.finding(f"exact mode did not run: {exc}; the verdict is static"), entry)
            continue
        if checkpoint.config_raw is None or not checkpoint.tensors:
            entry["why"] = "no config.json or no safetensors tensors in the drafter"
            unusable = rules.UNAVAILABLE.finding(f"exact mode did not run: {entry['why']}; the verdict is static")
            note(deployment, unusable, entry)
            continue
        case = case_from_checkpoint(f"d{index}", checkpoint, target_config,
                                    method=deployment.method, speculative=deployment.speculative)
        pending.setdefault(str(version), []).append((deployment, case))
    for version, items in pending.items():
        interpreters = exact_interpreters("vllm", version)
        if not interpreters:
            for deployment, _case in items:
                note(deployment, rules.UNAVAILABLE.finding(
                    f"no interpreter of vLLM {version} here; the verdict for it is static",
                    hint=f"specprobe engines install vllm=={version}"),
                    {"deployment": deployment.name, "engine": "vllm", "version": version, "verdict": "static",
                     "why": "release not installed in the engine cache"})
            continue
        run = run_cases([case for _deployment, case in items], interpreters[0], timeout_s=timeout_s)
        matches = same_release(run.version, version)
        for deployment, case in items:
            entry = {"deployment": deployment.name, "engine": "vllm", "version": version, "verdict": "static",
                     "interpreter": run.interpreter, "reported": run.version}
            if not matches:
                entry["why"] = f"the interpreter has vLLM {run.version}, not {version}"
                note(deployment, rules.UNAVAILABLE.finding(f"{entry['why']}; the verdict is static"), entry)
                continue
            reply = run.cases[case.id]
            entry["verdict"] = "static" if reply.get("stage") == "unsupported" else "exact"
            summary.append(entry)
            for finding in findings_for(case, reply, run.version):
                finding.location = f"{deployment.draft}/{finding.location}" if finding.location else deployment.draft
                report.add(deployment.locate(finding, "draft", "speculative", "command"))


def exact_for_given(report: Any, given: Sequence[str], engine: Any = None) -> None:
    """``gate --exact``: the deployments of the files (or the one launch command) gate examined."""
    from specprobe.deploy.argv import looks_like_serve_command
    from specprobe.deploy.loader import load_deployments
    from specprobe.deploy.model import deployment_from_argv

    if looks_like_serve_command(list(given)) and not Path(given[0]).exists():
        deployments = [deployment_from_argv(list(given))]
    else:
        deployments = [deployment for path in given for deployment in load_deployments(path)[0]]
    exact_for_deployments(report, deployments, engine)
