"""The fix plan: every change a drafter needs for one engine release, computed from its files alone.

``build_plan`` reads the drafter (config.json, safetensors headers, the small d2t/t2d tensors), the
target's config.json (and its safetensors headers when the target is a local folder) and what the
release does (``specprobe.compat.engine_facts`` public answers and the release's schema snapshot), and
returns a typed ``FixPlan``: the new config.json, every tensor of the copy with where its bytes come
from (copied, derived, taken from the target), the changes as FIX-* findings with before/after and
pinned evidence, and what cannot be fixed. Nothing is written here.
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from specprobe.checkpoint.folder import Checkpoint, TensorInfo, draft_folder, load_checkpoint
from specprobe.checkpoint.layout import DRAFT_FORMATS, Layout, detect_layout, effective_draft_config
from specprobe.checkpoint.rewrite import ByteRange, sha256_range, sha256_ranges
from specprobe.checkpoint.safetensors_header import DTYPE_SIZES, INTEGER_DTYPES, HeaderError, read_tensor
from specprobe.checkpoint.tokenizer_identity import ANOTHER, SAME, Identity, compare, facts_of
from specprobe.checkpoint.vocab import MAX_VOCAB_MAP_BYTES, read_vocab_tensor
from specprobe.compat.engine_facts import (
    default_aux_layers,
    draft_positions,
    fc_inputs,
    layer_prefixes,
    sglang_context_length,
    source_url,
    tied_head,
)
from specprobe.engines.facts import answer, newest_read
from specprobe.engines.spec import parse_engine_spec
from specprobe.findings import SpecprobeError
from specprobe.fix import vocab
from specprobe.fix.formats import (
    AUX_KEY,
    canonical_name,
    choose_architecture,
    loader_path,
    loads_as,
    registry_path,
    render_config,
    stored_name,
    vllm_rewrite,
)
from specprobe.fix.model import FixPlan, PlannedTensor, TargetFiles
from specprobe.hfconfig import ConfigError, load_config_json, parse_model_config
from specprobe.modelfiles import resolve_config_path
from specprobe.rules import fix as rules
from specprobe.rules.shapes import aux_ids_problem, aux_layer_sources
from specprobe.rules.tokenizer import MISMATCH as TOKENIZER_MISMATCH
from specprobe.rules.tokenizer import RETRAIN
from specprobe.untrusted.files import expand_user, is_dir

# Formats fix writes (the MLA drafters keep their own format; only their config and names are fixed).
OUT_FORMATS = ("eagle3", "specforge", "speculators", "vllm-native")
# Settings where a JSON null means "not set" to the format that wrote it.
_NONE_MEANS_ABSENT = ("target_hidden_size", "draft_vocab_size", "num_aux_hidden_states", "norm_before_residual")
# Folder problems that leave no complete, trustworthy set of weights to copy.
_UNCOPYABLE = frozenset(
    {"index-invalid", "path-escape", "shard-missing", "no-weights", "pickle-only", "truncated", "header",
     "duplicate", "dtype", "size", "overlap", "index-tensor-missing", "file-unreadable"}
)
# Where the newest release read takes the target layers to capture: vLLM the top-level ids only, SGLang
# eagle_config's only (fc is sized from num_aux_hidden_states or eagle_config in both).
_CAPTURE = {
    "vllm": source_url("vllm", "0.33.0", "vllm/v1/worker/gpu/spec_decode/eagle/eagle3_utils.py"),
    "sglang": source_url(
        "sglang", "0.5.23", "sglang/srt/model_executor/model_runner_components/spec_aux_hidden_state.py"
    ),
}
# Files beside the weights that are copied as they are (plain data an engine or a user may read).
_COPIED_SUFFIXES = (".json", ".md", ".txt", ".model", ".tiktoken", ".jinja", ".yaml", ".yml")
# A target embedding copied row by row: rows above this many bytes each are read whole (one range).
_SPECULATORS_KEYS = ("speculators_model_type", "speculators_version", "speculators_config", "transformer_layer_config")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


# --- inputs ---------------------------------------------------------------------------------------


def tokenizer_identity(draft_dir: Path, raw: dict[str, Any], layout: Layout, target: TargetFiles) -> Identity:
    """Whether the drafter was trained with the target's tokenizer (``checkpoint.tokenizer_identity``)."""
    t2d = layout.get("t2d")
    map_size = t2d.shape[0] if t2d is not None and len(t2d.shape) == 1 else None
    draft_vocab = _int(effective_draft_config(raw).get("vocab_size"))
    draft = facts_of("drafter", raw, draft_dir, draft_vocab)
    target_facts = facts_of("target", target.config.raw, target.folder or target.spec, _int(target.config.vocab_size))
    return compare(draft, target_facts, map_size=map_size)


def parse_release(engine: str) -> tuple[str, str]:
    """``E==V`` -> (engine, version); a range or a bare engine name is a usage error: a fix is for one release."""
    spec = parse_engine_spec(engine, allow_range=False)
    if spec.version is None:
        raise SpecprobeError(f"--engine {engine!r}: fix needs one release, "
                             f"e.g. {spec.engine}=={newest_read()[spec.engine]}")
    return spec.engine, spec.version


def load_target(spec: str) -> TargetFiles:
    """The target's config.json (a folder, a config.json or a cached hub id) and, for a local folder, its
    safetensors headers; an unreadable target is a usage error (exit 2)."""
    path = resolve_config_path(spec)
    try:
        config = parse_model_config(load_config_json(path))
    except ConfigError as exc:
        raise SpecprobeError(f"target {spec}: {exc}") from None
    folder = expand_user(spec)
    if not is_dir(folder):
        return TargetFiles(spec, config)
    try:
        checkpoint = load_checkpoint(folder)
    except OSError:
        return TargetFiles(spec, config, folder.resolve())
    return TargetFiles(spec, config, folder.resolve(), checkpoint if checkpoint.headers else None)


# --- what the release reads -----------------------------------------------------------------------


def _stored_aux(fc: TensorInfo | None, target_hidden: int | None) -> int | None:
    if fc is None or len(fc.shape) != 2 or not target_hidden or fc.shape[1] % target_hidden:
        return None
    return fc.shape[1] // target_hidden


# --- the plan -------------------------------------------------------------------------------------


class _Planner:
    """Builds one FixPlan; each step reads the drafter once and records changes or blockers."""

    def __init__(
        self, draft_dir: Path, engine: str, version: str, target: TargetFiles, format_out: str | None
    ) -> None:
        self.checkpoint = load_checkpoint(draft_dir)
        self.raw: dict[str, Any] = self.checkpoint.config_raw or {}
        self.layout: Layout = detect_layout(self.checkpoint, self.checkpoint.config_raw)
        self.effective = effective_draft_config(self.raw) if self.checkpoint.config_raw is not None else {}
        self.plan = FixPlan(self.checkpoint.root, engine, version, target, self.layout.draft_format)
        self.format_out = format_out
        self.target = target
        self.engine, self.version = engine, version
        self.identity: Identity | None = None

    # -- preconditions
    def usable(self) -> bool:
        plan, ckpt = self.plan, self.checkpoint
        damaged = [issue for issue in ckpt.issues if issue.kind in _UNCOPYABLE]
        if damaged:
            plan.block(
                rules.UNFIXABLE,
                "the drafter's files are damaged, so no copy of them can be trusted: "
                + "; ".join(issue.message for issue in damaged[:3]),
                location=damaged[0].location,
                hint="re-export the drafter from its training run",
            )
        if ckpt.config_raw is None:
            plan.block(
                rules.MISSING_INFO,
                "config.json is missing or unreadable: the drafter's sizes and settings are not in the files",
                location="config.json",
                hint="copy config.json from the training run",
            )
        elif self.layout.draft_format is None:
            plan.block(
                rules.UNFIXABLE,
                f"not an EAGLE-3 drafter (architecture {self.layout.architecture or '(none)'}, no fc over auxiliary "
                "hidden states): fix rewrites EAGLE-3 drafters only",
                location="config.json:architectures",
            )
        else:
            self.identity = tokenizer_identity(self.checkpoint.root, self.raw, self.layout, self.target)
            if self.identity.verdict == ANOTHER:
                plan.block(
                    rules.UNFIXABLE,
                    f"the drafter and the target have different tokenizers ({self.identity.evidence}): {RETRAIN}",
                    location="config.json",
                    evidence=TOKENIZER_MISMATCH.evidence,
                )
        return not plan.blockers

    # -- format and architecture
    def choose_format(self, stored_aux: int | None) -> str:
        source = self.layout.draft_format
        assert source is not None
        if self.format_out is not None:
            if self.layout.mla and self.format_out != source:
                self.plan.block(
                    rules.UNFIXABLE,
                    f"an MLA EAGLE-3 drafter cannot be written as {self.format_out}: that format holds Llama "
                    "attention only",
                )
            return self.format_out
        if self.layout.mla:
            return source
        if self.engine == "sglang":
            if source in ("speculators", "eagle3"):
                return "specforge"
            prefixes = layer_prefixes(self.engine, self.version)
            if source == "vllm-native" and prefixes is not None and "layers.0" not in prefixes.value:
                return "specforge"
            return source
        if source == "speculators" and stored_aux not in (None, 3):
            return "vllm-native"  # vLLM's speculators path sizes fc for 3 whatever the ids say
        if source == "eagle3" and stored_aux not in (None, 3):
            return "specforge"  # the ids must reach eagle_config, where vLLM sizes fc from them
        return source

    def run(self, *, target_local_rows: bool = True) -> FixPlan:
        plan = self.plan
        if not self.usable():
            return plan
        target_config = self.target.config
        draft_hidden = _int(self.effective.get("hidden_size"))
        target_hidden = (
            _int(target_config.hidden_size) or _int(self.effective.get("target_hidden_size")) or draft_hidden
        )
        fc = self.layout.get("fc.weight")
        stored_aux = _stored_aux(fc, target_hidden)
        out_format = self.choose_format(stored_aux)
        plan.out_format = out_format
        config = self._semantic_config()
        self._target_hidden(config, fc, draft_hidden, target_hidden)
        ids = self._aux_ids(stored_aux)
        self._vocab_sizes(config)
        self._max_position(config)
        self._model_type(config)
        tensors = self._tensors(out_format)
        self._vocab_map(config, tensors)
        self._head(config, tensors)
        architecture = choose_architecture(
            self.engine, self.version, self.layout.architecture, out_format, self.layout.mla
        )
        self._architecture(architecture, out_format)
        if plan.blockers:
            return plan
        plan.config = render_config(
            config, out_format, architecture or "LlamaForCausalLMEagle3", ids, self.raw, self.target
        )
        self._config_changes(config, ids, out_format)
        plan.tensors = tensors
        self._files()
        return plan

    def _semantic_config(self) -> dict[str, Any]:
        """The drafter's settings without the format's packaging (speculators nesting, architectures,
        aux-id placement), so any format can be rendered from it."""
        config = {
            k: copy.deepcopy(v)
            for k, v in self.effective.items()
            if k not in (*_SPECULATORS_KEYS, "architectures", "eagle_config", AUX_KEY, "num_aux_hidden_states")
        }
        for key in _NONE_MEANS_ABSENT:
            # speculators writes `"target_hidden_size": null` for "same as hidden_size"; its loader skips a
            # null, but the raw path's getattr(config, key, default) returns it and vLLM fails building fc
            # (None * int), so a null is dropped rather than carried into another format.
            if key in config and config[key] is None:
                del config[key]
        if self.layout.draft_format == "speculators":
            # vLLM's speculators path defaults norm_before_residual to True, the raw path to False: the
            # trained value is made explicit so that it survives a change of format.
            config.setdefault("norm_before_residual", self.raw.get("norm_before_residual", True))
        eagle_config = self.effective.get("eagle_config")
        if isinstance(eagle_config, dict):
            config["_eagle_config_rest"] = {k: v for k, v in eagle_config.items() if k != AUX_KEY}
        return config

    def _architecture(self, architecture: str | None, out_format: str) -> None:
        plan = self.plan
        current = self.layout.architecture
        if architecture is None:
            kind = "MLA" if self.layout.mla else "Llama"
            hint = None
            mla = answer(self.engine, self.version, "eagle3_mla_drafter")
            if self.layout.mla and mla is not None and mla.value is False:
                since = answer(self.engine, newest_read()[self.engine], "eagle3_mla_drafter")
                hint = f"MLA EAGLE-3 drafters load from {self.engine} {since.versions if since else 'newer releases'}"
            plan.block(
                rules.UNFIXABLE,
                f"{plan.engine_label} registers no EAGLE-3 draft class for a {kind} drafter",
                location="config.json:architectures",
                hint=hint,
                evidence=(source_url(self.engine, self.version, registry_path(self.engine)),),
            )
            return
        if architecture != current:
            rewritten = vllm_rewrite(current) if self.engine == "vllm" and current else current
            plan.change(
                rules.ARCHITECTURE,
                "architectures",
                [current] if current else None,
                [architecture],
                f"{plan.engine_label} loads {current} as {rewritten}, which is not one of its EAGLE-3 draft classes"
                if current and not loads_as(self.engine, self.version, current, out_format)
                else f"the {out_format} format declares {architecture}",
                location="config.json:architectures",
                evidence=(source_url(self.engine, self.version, registry_path(self.engine)),),
            )
        if out_format != self.layout.draft_format:
            plan.change(
                rules.FORMAT,
                "format",
                self.layout.draft_format,
                out_format,
                f"{DRAFT_FORMATS.get(out_format, out_format)}; what {plan.engine_label} reads"
                + (" best" if self.format_out is None else " (as asked with --format-out)"),
                evidence=(source_url(self.engine, self.version, loader_path(self.engine)),),
            )

    def _target_hidden(
        self, config: dict[str, Any], fc: TensorInfo | None, draft_hidden: int | None, target_hidden: int | None
    ) -> None:
        target = _int(self.target.config.hidden_size)
        if target is None or draft_hidden is None:
            return
        declared = _int(self.effective.get("target_hidden_size"))
        if fc is not None and len(fc.shape) == 2 and fc.shape[1] % target:
            self.plan.block(
                rules.UNFIXABLE,
                f"fc.weight {list(fc.shape)} was not trained on hidden states of width {target} (the target's "
                "hidden_size): the drafter belongs to another target",
                location=self.layout.location("fc.weight"),
                hint="serve it with the target it was trained for, or train a drafter for this one",
            )
            return
        if declared != target and (declared is not None or draft_hidden != target):
            config["target_hidden_size"] = target
            self.plan.change(
                rules.TARGET_HIDDEN,
                "target_hidden_size",
                declared,
                target,
                f"fc takes {target}-wide hidden states of the target (draft hidden_size {draft_hidden})",
                location="config.json:target_hidden_size",
                evidence=(source_url(self.engine, self.version, loader_path(self.engine)),),
            )

    def _aux_ids(self, stored: int | None) -> list[int] | None:
        """The aux-layer ids fc was trained on, checked against fc's width, the target's depth and what the
        release builds; None when the drafter names none and fc fuses the engines' default three."""
        plan = self.plan
        sources = aux_layer_sources(self.effective)
        valid = [(where, list(value)) for where, value in sources if isinstance(value, list) and value
                 and aux_ids_problem(value) is None]
        broken = [(where, value) for where, value in sources if (where, value) not in valid
                  and not (isinstance(value, list) and value and aux_ids_problem(value) is None)]
        layers = _int(self.target.config.num_hidden_layers)
        distinct: list[list[int]] = []
        for _, value in valid:
            if value not in distinct:
                distinct.append(value)
        if len(distinct) > 1 and stored is not None:
            distinct = [ids for ids in distinct if len(ids) == stored] or distinct
        if len(distinct) > 1:
            plan.block(
                rules.MISSING_INFO,
                "config.json names different aux-layer ids in different places ("
                + ", ".join(f"{where.split(':', 1)[1]} = {value}" for where, value in valid)
                + "): which ones fc was trained on is not in the files",
                location=valid[0][0],
                hint="keep the ids of the training run in one place and run fix again",
            )
            return None
        ids = distinct[0] if distinct else None
        if ids is None:
            if broken:
                plan.block(
                    rules.MISSING_INFO,
                    f"{broken[0][0].split(':', 1)[1]} is not a list of layer ids "
                    f"({aux_ids_problem(broken[0][1]) or 'empty'}): the target layers fc was trained on are needed",
                    location=broken[0][0],
                )
            elif stored not in (None, 3):
                plan.block(
                    rules.MISSING_INFO,
                    f"fc fuses {stored} hidden states but config.json names no aux-layer ids: the {stored} target "
                    "layers fc was trained on are not in the files (engines would capture their default three)",
                    location=self.layout.location("fc.weight"),
                    hint=f"write the trained ids into {AUX_KEY} and run fix again",
                )
            return None
        if stored is not None and len(ids) != stored:
            plan.block(
                rules.MISSING_INFO,
                f"fc fuses {stored} hidden states but config.json names {len(ids)} aux-layer ids {ids}: which "
                f"{stored} target layers fc was trained on is not in the files",
                location=valid[0][0],
            )
            return None
        if layers is not None and any(i >= layers for i in ids):
            bad = [i for i in ids if i >= layers]
            plan.block(
                rules.MISSING_INFO,
                f"aux-layer ids {bad} do not exist in the {layers}-layer target (valid 0..{layers - 1}): the "
                "drafter was trained for another target, or the ids are wrong; the layers fc was trained on are "
                "not in the files",
                location=valid[0][0],
                hint=f"write the trained ids into {AUX_KEY} (the engines' default for this target is "
                f"{default_aux_layers(layers)})",
            )
            return None
        built = fc_inputs(self.engine, self.version)
        if built is not None and built.value == "3" and len(ids) != 3:
            plan.block(
                rules.UNFIXABLE,
                f"{plan.engine_label} builds fc for exactly 3 aux hidden states; this drafter's fc fuses {len(ids)}",
                location=self.layout.location("fc.weight"),
                evidence=(built.evidence,),
            )
        return ids

    def _config_changes(self, semantic: dict[str, Any], ids: list[int] | None, out_format: str) -> None:
        if ids is None:
            return
        before = {where.split(":", 1)[1]: value for where, value in aux_layer_sources(self.raw)}
        if "num_aux_hidden_states" in self.raw:
            before["num_aux_hidden_states"] = self.raw["num_aux_hidden_states"]
        after = {where.split(":", 1)[1]: value for where, value in aux_layer_sources(self.plan.config)}
        if "num_aux_hidden_states" in self.plan.config:
            after["num_aux_hidden_states"] = self.plan.config["num_aux_hidden_states"]
        built = fc_inputs(self.engine, self.version)
        built_for_three = built is not None and built.value == "3"
        if before != after:
            self.plan.change(
                rules.AUX_IDS,
                "aux-layer ids",
                before or None,
                after,
                f"{self.plan.engine_label} captures the target layers named "
                + ("at the top level" if self.engine == "vllm" else "in eagle_config")
                + (
                    " and builds fc for exactly 3"
                    if built_for_three
                    else " and sizes fc from num_aux_hidden_states or eagle_config"
                )
                + f"; fc fuses {len(ids)}",
                location=f"config.json:{AUX_KEY}",
                evidence=(source_url(self.engine, self.version, loader_path(self.engine)), _CAPTURE[self.engine]),
            )

    def _model_type(self, config: dict[str, Any]) -> None:
        """vLLM reads a draft config whose model_type is DeepSeek-V3's as an MTP head (hf_config_override
        turns it into deepseek_mtp / DeepSeekMTPModel whatever the method), so an MLA EAGLE-3 drafter
        declaring it is refused at start; deepseek_v2's config class carries the same MLA fields."""
        declared = config.get("model_type")
        if self.engine != "vllm" or not self.layout.mla:
            return
        # engine fact draft_mtp_model_types: the model_types that release rewrites into its MTP model
        rewritten = answer("vllm", self.version, "draft_mtp_model_types")
        if rewritten is None or declared not in rewritten.value:
            return
        config["model_type"] = "deepseek_v2"
        self.plan.change(
            rules.ARCHITECTURE, "model_type", declared, "deepseek_v2",
            f"{self.plan.engine_label} turns a draft of model_type {declared} into its DeepSeek MTP model "
            "(Eagle3DeepSeekMTPModel is then refused); deepseek_v2 carries the same MLA settings",
            location="config.json:model_type",
            evidence=(source_url("vllm", self.version, "vllm/config/speculative.py"),),
        )

    def _vocab_sizes(self, config: dict[str, Any]) -> None:
        head = self.layout.get("lm_head.weight")
        target_vocab = _int(self.target.config.vocab_size)
        declared_vocab = _int(self.effective.get("vocab_size"))
        embed = self.layout.get("embed_tokens.weight")
        embed_rows = embed.shape[0] if embed is not None and len(embed.shape) == 2 else None
        # A drafter that ships its own embedding keeps the vocab_size it has rows for.
        if target_vocab is not None and declared_vocab != target_vocab and embed_rows in (None, target_vocab):
            if declared_vocab is not None and (self.identity is None or self.identity.verdict != SAME):
                # Rewriting vocab_size makes a drafter of another tokenizer load and propose ids that mean
                # other tokens: it is done only where the files show one tokenizer on both sides.
                self.plan.block(
                    rules.MISSING_INFO,
                    f"vocab_size {declared_vocab} differs from the target's {target_vocab} and nothing in the files "
                    "shows the drafter was trained with the target's tokenizer (no tokenizer.json or bos_token_id on "
                    "both sides, no t2d over the target's vocabulary): a padding cannot be told from another "
                    "tokenizer",
                    location="config.json:vocab_size",
                    hint="ship the training tokenizer's tokenizer.json (or bos_token_id) with the drafter and run fix "
                    "again",
                )
                return
            config["vocab_size"] = target_vocab
            self.plan.change(
                rules.DRAFT_VOCAB, "vocab_size", declared_vocab, target_vocab,
                "the drafter's vocab_size is the target's vocabulary (draft_vocab_size is its own)",
                location="config.json:vocab_size",
            )
        declared = _int(self.effective.get("draft_vocab_size"))
        if head is not None and len(head.shape) == 2:
            rows = head.shape[0]
            if declared != rows and not (declared is None and rows == (target_vocab or declared_vocab)):
                config["draft_vocab_size"] = rows
                self.plan.change(
                    rules.DRAFT_VOCAB, "draft_vocab_size", declared, rows,
                    f"lm_head.weight has {rows} rows: engines build the head and d2t from draft_vocab_size",
                    location="config.json:draft_vocab_size",
                    evidence=(source_url(self.engine, self.version, loader_path(self.engine)),),
                )

    def _max_position(self, config: dict[str, Any]) -> None:
        target = self.target.config
        draft_mpe = _int(config.get("max_position_embeddings"))
        target_mpe = _int(target.max_position_embeddings)
        if draft_mpe is None or target_mpe is None or draft_mpe >= target_mpe:
            behaviour = None
        else:
            behaviour = draft_positions(self.engine, self.version)
        wanted = target_mpe
        if self.engine == "sglang" and target_mpe is not None:
            # SGLang compares the context lengths it derives (rope factor and other length keys included).
            target_context = sglang_context_length(target.raw)
            draft_context = sglang_context_length(config)
            if target_context is not None and draft_context is not None and draft_context < target_context:
                behaviour = draft_positions(self.engine, self.version)
                factor = target_context / max(draft_context, 1) * (draft_mpe or 1)
                wanted = max(target_mpe, math.ceil(factor))
        if behaviour is None or behaviour.value == "raised" or wanted is None:
            return
        config["max_position_embeddings"] = wanted
        self.plan.change(
            rules.MAX_POSITION, "max_position_embeddings", draft_mpe, wanted,
            f"{self.plan.engine_label} "
            + ("refuses a target context longer than the draft's" if behaviour.value == "refused"
               else "runs the draft past its rotary cache"),
            location="config.json:max_position_embeddings",
            evidence=(behaviour.evidence,),
        )

    # -- tensors
    def _tensors(self, out_format: str) -> list[PlannedTensor]:
        plan = self.plan
        midlayer = out_format in ("eagle3", "specforge")
        out: list[PlannedTensor] = []
        renamed: list[tuple[str, str]] = []
        seen_canonical: dict[str, str] = {}
        ordered = sorted(self.checkpoint.tensors.items(), key=lambda item: (item[1].file, item[1].entry.begin))
        for name, info in ordered:
            canonical = canonical_name(name)
            if canonical in seen_canonical:
                first = self.checkpoint.tensors[seen_canonical[canonical]]
                if _same_bytes(self.checkpoint, first, info):
                    plan.change(
                        rules.DROPPED, f"tensor {name}", "a second copy of " + seen_canonical[canonical], "dropped",
                        "byte-identical duplicate under the other namespace; loaders map one onto the other",
                        location=f"{info.file}:{name}",
                    )
                    continue
                plan.block(
                    rules.MISSING_INFO,
                    f"{seen_canonical[canonical]} and {name} are two different copies of one weight: which one was "
                    "trained is not in the files",
                    location=f"{info.file}:{name}",
                )
                continue
            seen_canonical[canonical] = name
            if canonical in ("d2t", "t2d"):
                continue  # planned by _vocab_map
            if canonical == "embed_tokens.weight" and self._embed_is_targets(info):
                plan.change(
                    rules.DROPPED, "tensor embed_tokens.weight", list(info.shape), "dropped",
                    "byte-identical to the target's embedding, which the engine shares with a drafter that ships none",
                    location=f"{info.file}:{name}",
                )
                continue
            new_name = stored_name(canonical, midlayer, self.layout.mla, name)
            if new_name != name:
                renamed.append((name, new_name))
            out.append(
                PlannedTensor(
                    name=new_name, file=info.file, dtype=info.dtype, shape=info.shape, origin="copied",
                    source_name=name,
                    ranges=(ByteRange(self.checkpoint.path_of(info), info.entry.begin, info.entry.nbytes),),
                )
            )
        if renamed:
            first_before, first_after = renamed[0]
            plan.change(
                rules.TENSOR_NAMES,
                f"{len(renamed)} tensor name(s)",
                f"{first_before}, ...",
                f"{first_after}, ...",
                f"{plan.engine_label} and the {out_format} format name the decoder layer "
                + ("midlayer" if midlayer else "layers.0"),
                evidence=tuple(
                    a.evidence for a in [layer_prefixes(self.engine, self.version)] if a is not None
                ),
            )
        return out

    def _embed_is_targets(self, info: TensorInfo) -> bool:
        found = self._target_tensor(("model.embed_tokens.weight", "embed_tokens.weight",
                                     "model.language_model.embed_tokens.weight"))
        if found is None:
            return False
        path, entry_info = found
        if entry_info.shape != info.shape or entry_info.dtype != info.dtype:
            return False
        return sha256_range(path, entry_info.entry.begin, entry_info.entry.nbytes) == sha256_range(
            self.checkpoint.path_of(info), info.entry.begin, info.entry.nbytes
        )

    def _target_tensor(self, names: Sequence[str]) -> tuple[Path, TensorInfo] | None:
        ckpt = self.target.checkpoint
        if ckpt is None:
            return None
        for name in names:
            info = ckpt.tensors.get(name)
            if info is not None:
                return ckpt.path_of(info), info
        return None

    def _vocab_map(self, config: dict[str, Any], tensors: list[PlannedTensor]) -> None:
        plan = self.plan
        head = self.layout.get("lm_head.weight")
        draft_vocab = (
            head.shape[0] if head is not None and len(head.shape) == 2
            else _int(config.get("draft_vocab_size")) or _int(config.get("vocab_size"))
        )
        target_vocab = _int(self.target.config.vocab_size) or _int(config.get("vocab_size"))
        d2t_info, t2d_info = self.layout.get("d2t"), self.layout.get("t2d")
        if draft_vocab is None or target_vocab is None or draft_vocab >= target_vocab:
            for name, info in (("d2t", d2t_info), ("t2d", t2d_info)):
                if info is not None:
                    tensors.append(self._copied(name, info))
            return
        d2t_values, d2t_dtype = self._read_map("d2t")
        t2d_values, t2d_dtype = self._read_map("t2d")
        result = vocab.repair(
            vocab.VocabInput(
                draft_vocab=draft_vocab, target_vocab=target_vocab,
                d2t=d2t_values, d2t_dtype=d2t_dtype, t2d=t2d_values, t2d_dtype=t2d_dtype,
                d2t_present=d2t_info is not None, t2d_present=t2d_info is not None,
            )
        )
        if result.missing is not None or result.used is None:
            plan.block(rules.MISSING_INFO, result.missing or "the vocabulary map cannot be rebuilt",
                       location=self.layout.location("d2t"))
            return
        self.used = result.used
        holder = d2t_info or t2d_info
        home = holder.file if holder is not None else self._first_file()
        evidence = (source_url(self.engine, self.version, loader_path(self.engine)),)
        if result.write_d2t:
            tensors.append(PlannedTensor("d2t", home, "I64", (draft_vocab,), "derived", "d2t" if d2t_info else None,
                                         data=vocab.d2t_bytes(result.used), note=result.why))
            plan.change(rules.VOCAB_MAP, "d2t", f"{result.d2t_kind.value} ({d2t_dtype})" if d2t_info else None,
                        f"int64 offsets [{draft_vocab}]", result.why, location=self.layout.location("d2t"),
                        evidence=evidence)
        elif d2t_info is not None:
            tensors.append(self._copied("d2t", d2t_info))
        if result.write_t2d:
            tensors.append(PlannedTensor("t2d", home, "BOOL", (target_vocab,), "derived", "t2d" if t2d_info else None,
                                         data=vocab.t2d_bytes(result.used, target_vocab), note=result.why))
            plan.change(rules.VOCAB_MAP, "t2d", f"{t2d_dtype}" if t2d_info else None, f"bool [{target_vocab}]",
                        result.why, location=self.layout.location("t2d"), evidence=evidence)
        elif t2d_info is not None:
            tensors.append(self._copied("t2d", t2d_info))

    used: tuple[int, ...] | None = None

    def _read_map(self, name: str) -> tuple[list[int] | bytes | None, str | None]:
        info = self.layout.get(name)
        if info is None:
            return None, None
        if info.dtype in INTEGER_DTYPES or info.dtype == "BOOL":
            read = read_vocab_tensor(self.checkpoint, self.layout, name)
            if read is None or read.values is None or len(read.shape) != 1:
                return None, info.dtype
            values = read.values
            return (values if isinstance(values, bytes) else list(values)), info.dtype
        try:
            array = read_tensor(info.entry, self.checkpoint.path_of(info), max_bytes=MAX_VOCAB_MAP_BYTES)
        except (HeaderError, OSError):
            return None, info.dtype
        flat = [float(v) for v in array.reshape(-1)] if array.ndim == 1 else None
        if flat is None or not all(math.isfinite(v) and v == int(v) for v in flat):
            return None, info.dtype
        return [int(v) for v in flat], info.dtype

    def _copied(self, name: str, info: TensorInfo) -> PlannedTensor:
        original = self.layout.original_names.get(name, name)
        return PlannedTensor(name, info.file, info.dtype, info.shape, "copied", original,
                             ranges=(ByteRange(self.checkpoint.path_of(info), info.entry.begin, info.entry.nbytes),))

    def _first_file(self) -> str:
        return sorted(self.checkpoint.headers)[0] if self.checkpoint.headers else "model.safetensors"

    def _head(self, config: dict[str, Any], tensors: list[PlannedTensor]) -> None:
        """A tied or missing head: take it from the target where the release would otherwise build a wrong one."""
        plan = self.plan
        if any(t.name == "lm_head.weight" for t in tensors):
            return
        draft_vocab = _int(config.get("draft_vocab_size")) or _int(config.get("vocab_size"))
        target_vocab = _int(self.target.config.vocab_size)
        hidden = _int(config.get("hidden_size"))
        tied = config.get("tie_word_embeddings") is True
        reduced = draft_vocab is not None and target_vocab is not None and draft_vocab < target_vocab
        head = tied_head(self.engine, self.version)
        if not tied and not reduced and self._borrows_target_head():
            return  # vLLM >= 0.12 borrows the target's head for a full-vocabulary drafter that ships none
        if not tied and reduced:
            plan.block(
                rules.MISSING_INFO,
                f"no lm_head.weight and draft_vocab_size {draft_vocab} < the target's {target_vocab}: a trained "
                "reduced head cannot be rebuilt from the files",
                location="lm_head.weight",
            )
            return
        # Tied: the head is the (shared) embedding, i.e. the target's; untied full vocabulary on SGLang: the
        # target's own head is what the drafter was trained against.
        names = (
            ("model.embed_tokens.weight", "embed_tokens.weight", "model.language_model.embed_tokens.weight")
            if tied or self.target.config.tie_word_embeddings
            else ("lm_head.weight", "language_model.lm_head.weight")
        )
        found = self._target_tensor(names)
        if found is None:
            plan.block(
                rules.MISSING_INFO,
                "the drafter ships no lm_head.weight"
                + (" and ties it to the embedding" if tied else "")
                + f"; {plan.engine_label} would then run a "
                + ("full-vocabulary or random head" if tied else "random head")
                + ": the target's weights (a local --target folder with safetensors) are needed to take the head from",
                location="lm_head.weight",
                evidence=(head.evidence,) if head else (),
            )
            return
        path, info = found
        if hidden is None or len(info.shape) != 2 or info.shape[1] != hidden:
            plan.block(
                rules.UNFIXABLE,
                f"the target's {info.entry.name} is {list(info.shape)}, not [vocab, {hidden}]: the drafter's head "
                "cannot be the target's",
                location="lm_head.weight",
            )
            return
        row = info.shape[1] * DTYPE_SIZES[info.dtype]
        used = self.used if reduced and self.used is not None else None
        if reduced and used is None:
            return  # the vocabulary map is missing: already a blocker
        ids = used if used is not None else range(info.shape[0])
        if used is None:
            ranges: tuple[ByteRange, ...] = (ByteRange(path, info.entry.begin, info.entry.nbytes),)
        else:
            ranges = tuple(ByteRange(path, info.entry.begin + i * row, row) for i in ids)
        rows = len(ids)
        tensors.append(
            PlannedTensor("lm_head.weight", self._first_file(), info.dtype, (rows, info.shape[1]), "target",
                          None, ranges=ranges,
                          note=f"{info.entry.name} of the target" + (" at the draft vocabulary's target ids"
                                                                      if used is not None else ""))
        )
        plan.change(
            rules.FROM_TARGET, "lm_head.weight", None, f"[{rows}, {info.shape[1]}] from the target's {info.entry.name}",
            ("the drafter ties its head to the embedding it shares with the target; "
             if tied else "the drafter ships no head; ")
            + (f"{plan.engine_label} would use embed_tokens [{target_vocab}, hidden] as the head while d2t maps "
               f"{draft_vocab} draft logits" if tied and reduced and head is not None and head.value == "embed_tokens"
               else f"{plan.engine_label} would build a head of its own"),
            location="lm_head.weight",
            evidence=(head.evidence,) if head else (),
        )
        if tied:
            config["tie_word_embeddings"] = False
            plan.change(rules.FROM_TARGET, "tie_word_embeddings", True, False,
                        "the copy ships its own lm_head", location="config.json:tie_word_embeddings")

    def _borrows_target_head(self) -> bool:
        """Whether the release gives a drafter without lm_head the target's head (engine fact)."""
        found = answer(self.engine, self.version, "eagle3_missing_lm_head")
        return found is not None and found.value == "target_head"

    def _files(self) -> None:
        plan = self.plan
        plan.files = {
            name: str(header.metadata.get("format", "pt")) for name, header in self.checkpoint.headers.items()
        }
        for tensor in plan.tensors:
            plan.files.setdefault(tensor.file, "pt")
        plan.index_file = self.checkpoint.index_file
        left_out: list[str] = []
        try:
            names = sorted(p.name for p in self.checkpoint.root.iterdir())
        except OSError:
            names = []
        for name in names:
            path = self.checkpoint.root / name
            if name == "config.json" or name in plan.files or name == plan.index_file:
                continue
            if name.endswith(_COPIED_SUFFIXES) and not path.is_symlink() and path.is_file():
                plan.copied_files.append(name)
            else:
                left_out.append(name)
        if left_out:
            plan.change(rules.FILES, "files left out", ", ".join(left_out[:5]), "not copied",
                        "only config.json, safetensors weights, their index and plain text/JSON files are copied; "
                        "code and pickles never are")


def _same_bytes(ckpt: Checkpoint, first: TensorInfo, second: TensorInfo) -> bool:
    if first.shape != second.shape or first.dtype != second.dtype:
        return False
    return sha256_range(ckpt.path_of(first), first.entry.begin, first.entry.nbytes) == sha256_range(
        ckpt.path_of(second), second.entry.begin, second.entry.nbytes
    )


def build_plan(
    draft_dir: Path | str,
    *,
    target: str,
    engine: str,
    format_out: str | None = None,
) -> FixPlan:
    """The plan for ``draft_dir`` on release ``engine`` (``E==V``) with ``target``; SpecprobeError for
    arguments that cannot be used (exit 2)."""
    path = draft_folder(draft_dir)
    name, version = parse_release(engine)
    if format_out is not None and format_out not in OUT_FORMATS:
        raise SpecprobeError(f"--format-out {format_out!r}: choose one of {', '.join(OUT_FORMATS)}")
    target_files = load_target(target)
    try:
        return _Planner(path, name, version, target_files, format_out).run()
    except OSError as exc:
        raise SpecprobeError(f"cannot read draft folder {path}: {exc.strerror or exc}") from None


def tensor_digest(tensor: PlannedTensor) -> str:
    """sha256 of the bytes the copy will hold for ``tensor`` (derived data or its source ranges)."""
    if tensor.data is not None:
        return hashlib.sha256(tensor.data).hexdigest()
    return sha256_ranges(tensor.ranges)
