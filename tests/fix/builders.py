"""Drafters and targets for the fix tests, in real on-disk formats (the project's own writer), and the
broken variants of each failure class fix repairs."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from specprobe.checkpoint.writer import write_safetensors
from specprobe.demo.fixtures import DraftSpec, draft_config, draft_tensors, target_config, vocab_map, write_json

HIDDEN = 64
VOCAB = 512
LAYERS = 8


def make_target(folder: Path, *, hidden: int = HIDDEN, weights: bool = True, seed: int = 7, **extra: Any) -> Path:
    """A target config.json, and (``weights``) a safetensors file holding its embedding and head."""
    folder.mkdir(parents=True, exist_ok=True)
    write_json(folder / "config.json", target_config(hidden_size=hidden, vocab_size=VOCAB, num_hidden_layers=LAYERS,
                                                     **extra))
    if weights:
        rng = np.random.default_rng(seed)
        write_safetensors(
            folder / "model.safetensors",
            {
                "model.embed_tokens.weight": rng.normal(0, 0.02, (VOCAB, hidden)).astype(np.float32),
                "lm_head.weight": rng.normal(0, 0.02, (VOCAB, hidden)).astype(np.float32),
            },
            metadata={"format": "pt"},
        )
    return folder


Edit = Callable[[DraftSpec, dict[str, Any], dict[str, Any]], None]


def make_draft(folder: Path, spec: DraftSpec, edit: Edit | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    config = draft_config(spec)
    tensors: dict[str, Any] = dict(draft_tensors(spec))
    if edit is not None:
        edit(spec, config, tensors)
    write_json(folder / "config.json", config)
    write_safetensors(folder / "model.safetensors", tensors, metadata={"format": "pt"})
    return folder


def tree_digest(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (and the names of folders), to prove nothing changed."""
    found: dict[str, str] = {}
    for base, dirs, files in os.walk(root):
        for name in dirs:
            found[str((Path(base) / name).relative_to(root)) + "/"] = "dir"
        for name in files:
            path = Path(base) / name
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def config_of(folder: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    return value


# --- broken variants, one per failure class: (name, DraftSpec kwargs, edit, target extra, engine, rule fired)


def _targets(spec: DraftSpec) -> np.ndarray:
    d2t, _ = vocab_map(spec)
    return np.arange(d2t.size) + d2t


def d2t_absolute(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    tensors["d2t"] = _targets(spec).astype(np.int64)


def d2t_absent(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    del tensors["d2t"]


def d2t_shuffled(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    targets = _targets(spec)
    order = np.random.default_rng(3).permutation(targets.size)
    tensors["d2t"] = (targets[order] - np.arange(targets.size)).astype(np.int64)


def d2t_zeros(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    tensors["d2t"] = np.zeros(spec.draft_vocab_size, dtype=np.int64)


def d2t_int32(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    tensors["d2t"] = tensors["d2t"].astype(np.int32)


def d2t_float(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    tensors["d2t"] = tensors["d2t"].astype(np.float32)


def t2d_uint8(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    tensors["t2d"] = tensors["t2d"].astype(np.uint8)


def t2d_moved(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    t2d = tensors["t2d"].copy()
    t2d[np.flatnonzero(t2d)[0]] = False
    t2d[np.flatnonzero(~t2d)[0]] = True
    tensors["t2d"] = t2d


def t2d_absent(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    del tensors["t2d"]


def draft_vocab_wrong(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    config["draft_vocab_size"] = spec.draft_vocab_size * 2


def vocab_size_wrong(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    config["vocab_size"] = VOCAB - 100


def draft_vocab_absent(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    config.pop("draft_vocab_size")


def ids_top_level_only(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    ids = config.pop("eagle_config")["eagle_aux_hidden_state_layer_ids"]
    config["eagle_aux_hidden_state_layer_ids"] = ids


def short_context(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    config["max_position_embeddings"] = 2048


def model_prefix(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    for name in [n for n in tensors if n.startswith("layers.")]:
        tensors["model." + name] = tensors.pop(name)


def both_namespaces(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    for name in [n for n in tensors if n.startswith("layers.0.")]:
        tensors["midlayer." + name[len("layers.0."):]] = tensors[name]


def tied_without_head(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    del tensors["lm_head.weight"]
    config["tie_word_embeddings"] = True


def no_head(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    del tensors["lm_head.weight"]


def target_embedding_copy(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    rng = np.random.default_rng(7)
    tensors["embed_tokens.weight"] = rng.normal(0, 0.02, (VOCAB, HIDDEN)).astype(np.float32)


def no_target_hidden(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
    config.pop("target_hidden_size", None)


# (id, DraftSpec overrides, edit, target config extra / hidden, engine, rule that must fire)
BROKEN: list[tuple[str, dict[str, Any], Edit | None, dict[str, Any], str, str]] = [
    ("arch-llama-on-sglang", {"draft_format": "eagle3"}, None, {}, "sglang==0.5.23", "FIX-ARCHITECTURE"),
    ("layers0-on-old-sglang", {"draft_format": "vllm-native"}, None, {}, "sglang==0.5.11", "FIX-TENSOR-NAMES"),
    ("speculators-on-sglang", {"draft_format": "speculators"}, None, {}, "sglang==0.5.23", "FIX-FORMAT"),
    ("speculators-4-aux-vllm", {"draft_format": "speculators", "aux_layer_ids": [1, 3, 5, 6]}, None, {},
     "vllm==0.33.0", "FIX-FORMAT"),
    ("ids-eagle-config-only-vllm", {"draft_format": "specforge"}, None, {}, "vllm==0.33.0", "FIX-AUX-IDS"),
    ("ids-top-level-only-sglang", {"draft_format": "specforge"}, ids_top_level_only, {}, "sglang==0.5.23",
     "FIX-AUX-IDS"),
    ("d2t-absolute", {}, d2t_absolute, {}, "vllm==0.33.0", "FIX-VOCAB-MAP"),
    ("d2t-absent-t2d-present", {}, d2t_absent, {}, "vllm==0.33.0", "FIX-VOCAB-MAP"),
    ("d2t-shuffled-t2d-present", {}, d2t_shuffled, {}, "vllm==0.33.0", "FIX-VOCAB-MAP"),
    ("d2t-zeros-t2d-present", {}, d2t_zeros, {}, "sglang==0.5.23", "FIX-VOCAB-MAP"),
    ("d2t-int32", {}, d2t_int32, {}, "vllm==0.33.0", "FIX-VOCAB-MAP"),
    ("d2t-float", {}, d2t_float, {}, "vllm==0.33.0", "FIX-VOCAB-MAP"),
    ("t2d-uint8", {}, t2d_uint8, {}, "vllm==0.33.0", "FIX-VOCAB-MAP"),
    ("t2d-disagrees", {}, t2d_moved, {}, "vllm==0.33.0", "FIX-VOCAB-MAP"),
    ("t2d-absent", {}, t2d_absent, {}, "vllm==0.33.0", "FIX-VOCAB-MAP"),
    ("draft-vocab-wrong", {}, draft_vocab_wrong, {}, "vllm==0.33.0", "FIX-DRAFT-VOCAB"),
    ("vocab-size-not-the-targets", {}, vocab_size_wrong, {}, "vllm==0.33.0", "FIX-DRAFT-VOCAB"),
    ("draft-vocab-absent", {}, draft_vocab_absent, {}, "sglang==0.5.23", "FIX-DRAFT-VOCAB"),
    ("target-hidden-missing", {"hidden_size": 32, "num_attention_heads": 4, "num_key_value_heads": 2,
                               "intermediate_size": 64, "target_hidden_size": HIDDEN}, no_target_hidden,
     {}, "vllm==0.33.0", "FIX-TARGET-HIDDEN"),
    ("short-context-old-vllm", {}, short_context, {}, "vllm==0.21.0", "FIX-MAX-POSITION"),
    ("short-context-sglang", {}, short_context, {}, "sglang==0.5.23", "FIX-MAX-POSITION"),
    ("model-prefix", {}, model_prefix, {}, "vllm==0.33.0", "FIX-TENSOR-NAMES"),
    ("both-namespaces", {}, both_namespaces, {}, "vllm==0.33.0", "FIX-DROPPED"),
    ("tied-head-reduced-vocab", {}, tied_without_head, {}, "sglang==0.5.23", "FIX-FROM-TARGET"),
    ("embedding-shared-with-target", {}, target_embedding_copy, {}, "vllm==0.33.0", "FIX-DROPPED"),
    ("full-vocab-no-head-sglang", {"draft_vocab_size": VOCAB}, no_head, {}, "sglang==0.5.23", "FIX-FROM-TARGET"),
    ("full-vocab-no-head-old-vllm", {"draft_vocab_size": VOCAB}, no_head, {}, "vllm==0.11.0", "FIX-FROM-TARGET"),
]
