"""Builds a corpus case (tests/cases/<case>/case.json) into a temporary folder with the real writer.

A case names a drafter format and DraftSpec fields, then applies edits that reproduce one failure:
config keys set or removed, tensors dropped, renamed or replaced, vocab-map corruptions, and
file-level damage (truncation, hostile header lengths, pickles, remote code, symlinks, shards).
"""

from __future__ import annotations

import json
import pickle
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np

from specprobe.checkpoint.writer import TensorSpec, write_safetensors, write_sharded
from specprobe.demo.fixtures import (
    DraftSpec,
    draft_config,
    draft_tensors,
    target_config,
    vocab_map,
    write_json,
)
from tests.check.formbuild import build_form_case, target_preset

CASES_DIR = Path(__file__).resolve().parent.parent / "cases"
SENTINEL = "sentinel-created-by-input-code"


def case_names() -> list[str]:
    return sorted(p.name for p in CASES_DIR.iterdir() if (p / "case.json").is_file())


def load_case(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    folder = CASES_DIR / name
    case = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    expected = json.loads((folder / "expected.json").read_text(encoding="utf-8"))
    return case, expected


class _TouchOnUnpickle:
    """Unpickling this object creates a file: the proof that a loader executed pickle code."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (Path.touch, (self.path,))


def _vocab_edit(kind: str, spec: DraftSpec, tensors: dict[str, Any]) -> None:
    d2t, t2d = vocab_map(spec)
    targets = np.arange(d2t.size) + d2t
    if kind == "absolute":
        tensors["d2t"] = targets.astype(np.int64)
    elif kind == "zeros":
        tensors["d2t"] = np.zeros_like(d2t)
    elif kind == "swap":
        swapped = targets.copy()
        swapped[[3, 4]] = swapped[[4, 3]]
        tensors["d2t"] = (swapped - np.arange(d2t.size)).astype(np.int64)
    elif kind == "int32":
        tensors["d2t"] = d2t.astype(np.int32)
    elif kind == "float":
        tensors["d2t"] = d2t.astype(np.float32)
    elif kind == "t2d-extra":
        extra = t2d.copy()
        extra[np.flatnonzero(~t2d)[0]] = True
        tensors["t2d"] = extra
    elif kind == "t2d-moved":
        moved = t2d.copy()
        moved[np.flatnonzero(t2d)[0]] = False
        moved[np.flatnonzero(~t2d)[0]] = True
        tensors["t2d"] = moved
    elif kind == "t2d-uint8":
        tensors["t2d"] = t2d.astype(np.uint8)
    elif kind == "t2d-float":
        tensors["t2d"] = t2d.astype(np.float32)
    elif kind == "t2d-short":
        tensors["t2d"] = t2d[:-1]
    else:
        raise ValueError(f"unknown vocab edit {kind}")


def _tensor_value(raw: dict[str, Any], spec: DraftSpec, current: Any) -> Any:
    if raw.get("fill") is not None:
        shape = tuple(raw.get("shape") or (current.shape if current is not None else ()))
        value = np.full(shape, float(raw["fill"]), dtype=np.float32)
        if raw.get("nan"):
            value.flat[0] = np.nan
        return value
    return TensorSpec(dtype=raw.get("dtype", spec.dtype), shape=tuple(raw["shape"]))


def build_draft_case(folder: Path, draft: dict[str, Any]) -> DraftSpec:
    if "form" in draft:
        # A drafter form other than EAGLE-3 (tests/check/formbuild.py): published config shapes.
        build_form_case(folder, draft)
        return DraftSpec()
    spec = DraftSpec(draft_format=draft.get("format", "vllm-native"), **draft.get("spec", {}))
    folder.mkdir(parents=True, exist_ok=True)
    config = draft_config(spec)
    for key, value in draft.get("config_set", {}).items():
        config[key] = value
    for key in draft.get("config_remove", []):
        config.pop(key, None)
    tensors = draft_tensors(spec)
    for name in draft.get("tensors_remove", []):
        tensors.pop(name)
    for old, new in draft.get("tensors_rename", {}).items():
        tensors[new] = tensors.pop(old)
    for name, raw in draft.get("tensors_set", {}).items():
        tensors[name] = _tensor_value(raw, spec, tensors.get(name))
    if draft.get("vocab"):
        _vocab_edit(draft["vocab"], spec, tensors)
    write_json(folder / "config.json", config)
    shards = draft.get("shards")
    if shards:
        names = list(tensors)
        parts = {
            f"model-{i + 1:05d}-of-{shards:05d}.safetensors": {n: tensors[n] for n in names[i::shards]}
            for i in range(shards)
        }
        write_sharded(folder, parts)
    else:
        write_safetensors(folder / "model.safetensors", tensors, metadata={"format": "pt"})
    return spec


def _rewrite_header(path: Path, edit: dict[str, Any]) -> None:
    raw = path.read_bytes()
    (length,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + length])
    data = raw[8 + length :]
    for key, value in edit.get("set", {}).items():
        header[edit["tensor"]][key] = value
    if "copy" in edit:
        header[edit["copy"]["as"]] = dict(header[edit["copy"]["from"]])
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)


def apply_file_ops(folder: Path, ops: list[dict[str, Any]], sandbox: Path) -> None:
    """File-level damage; ``sandbox`` (outside the draft folder) receives the sentinel if code runs."""
    for op in ops:
        kind = op["op"]
        path = folder / op.get("file", "model.safetensors")
        if kind == "truncate":
            size = path.stat().st_size
            with path.open("r+b") as handle:
                handle.truncate(size - op["bytes"])
        elif kind == "append":
            with path.open("ab") as handle:
                handle.write(b"\0" * op["bytes"])
        elif kind == "auto-map-only":
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            config["auto_map"] = {"AutoConfig": "other/repo--configuration_draft.DraftConfig"}
            write_json(folder / "config.json", config)
        elif kind == "header-length":
            with path.open("r+b") as handle:
                handle.write(struct.pack("<Q", op["value"]))
        elif kind == "header-edit":
            _rewrite_header(path, op)
        elif kind == "write":
            path.write_text(op["text"], encoding="utf-8")
        elif kind == "remove":
            path.unlink()
        elif kind == "index-edit":
            index = json.loads(path.read_text(encoding="utf-8"))
            index["weight_map"].update(op["set"])
            path.write_text(json.dumps(index), encoding="utf-8")
        elif kind == "index-remove":
            index = json.loads(path.read_text(encoding="utf-8"))
            for name in op["tensors"]:
                del index["weight_map"][name]
            path.write_text(json.dumps(index), encoding="utf-8")
        elif kind == "copy":
            shutil.copyfile(folder / op["from"], folder / op["to"])
        elif kind in ("pickle-only", "pickle-beside"):
            if kind == "pickle-only":
                for weights in folder.glob("*.safetensors"):
                    weights.unlink()
            payload = {"lm_head.weight": _TouchOnUnpickle(sandbox / SENTINEL)}
            (folder / "pytorch_model.bin").write_bytes(pickle.dumps(payload))
        elif kind == "remote-code":
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            config["auto_map"] = {"AutoModelForCausalLM": "modeling_draft.DraftModel"}
            write_json(folder / "config.json", config)
            (folder / "modeling_draft.py").write_text(
                f"from pathlib import Path\nPath({str(sandbox / SENTINEL)!r}).touch()\n", encoding="utf-8"
            )
        elif kind == "symlink":
            outside = sandbox / "outside.safetensors"
            shutil.copyfile(folder / "model.safetensors", outside)
            (folder / op["name"]).symlink_to(outside)
        elif kind == "symlink-loop":
            # Two links pointing at each other: opening either fails with ELOOP.
            (folder / op["name"]).symlink_to(op["name"] + ".loop")
            (folder / (op["name"] + ".loop")).symlink_to(op["name"])
        elif kind == "config-literal":
            # A raw JSON literal (NaN, Infinity) spliced into config.json, which json.dumps cannot write.
            text = (folder / "config.json").read_text(encoding="utf-8").rstrip().removesuffix("}")
            (folder / "config.json").write_text(f'{text}, "{op["key"]}": {op["literal"]}}}', encoding="utf-8")
        else:
            raise ValueError(f"unknown file op {kind}")


def build_case(name: str, root: Path) -> tuple[Path, dict[str, Any], dict[str, Any]]:
    """Build case ``name`` under ``root``; returns the draft folder, check kwargs and expectations."""
    case, expected = load_case(name)
    draft_dir = root / "draft"
    build_draft_case(draft_dir, case.get("draft", {}))
    sandbox = root / "sandbox"
    sandbox.mkdir()
    apply_file_ops(draft_dir, case.get("files", []), sandbox)
    kwargs: dict[str, Any] = dict(case.get("check", {}))
    if "target" in case:
        target_dir = root / "target"
        target_dir.mkdir()
        if isinstance(case["target"], str):
            (target_dir / "config.json").write_text(case["target"], encoding="utf-8")
        else:
            write_json(target_dir / "config.json", case_target_config(case["target"]))
        write_target_files(target_dir, case.get("target_files", {}))
        kwargs["target"] = str(target_dir)
    return draft_dir, kwargs, expected


def case_target_config(target: dict[str, Any]) -> dict[str, Any]:
    """A case's target config.json: a published preset with edits, or target_config() keywords."""
    return target_preset(target) or target_config(**target)


def write_target_files(target_dir: Path, files: dict[str, Any]) -> None:
    """Files beside the target's config.json (tokenizer.json, generation_config.json): JSON objects or text."""
    for name, content in files.items():
        path = target_dir / name
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            write_json(path, content)
