"""Locating and reading one tensor (``specprobe.checkpoint.tensors``) as untrusted input: shard indexes and
safetensors headers of any shape give a checked location or the reader's own error, nothing else; names
with the families' prefixes, tied heads, and the per-read byte limit. The files are held in memory."""

from __future__ import annotations

import contextlib
import json
import math
import struct
from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from safetensors.numpy import save

from specprobe.checkpoint.safetensors_header import DTYPE_SIZES
from specprobe.checkpoint.tensors import DEFAULT_MAX_TENSOR_BYTES, TensorReader, parse_weight_map
from specprobe.modelfiles import ModelFiles, TensorReadError


class MemoryFiles(ModelFiles):
    """A model whose files are bytes in memory; counts the bytes read of each."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.label = "memory"
        self.files = files
        self.read: dict[str, int] = {}

    def listing(self) -> dict[str, int | None]:
        return {name: len(data) for name, data in self.files.items()}

    def read_file(self, name: str, *, max_bytes: int) -> bytes:
        if name not in self.files:
            raise FileNotFoundError(name)
        self.read[name] = self.read.get(name, 0) + len(self.files[name])
        return self.files[name]

    def read_range(self, name: str, begin: int, length: int) -> bytes:
        data = self.files[name][begin : begin + length]
        self.read[name] = self.read.get(name, 0) + len(data)
        return data


def _safetensors(tensors: dict[str, np.ndarray]) -> bytes:
    return save(tensors)


def _model(tensors: dict[str, np.ndarray], config: dict[str, Any] | None = None, *, index: bool = False) -> MemoryFiles:
    files = {"config.json": json.dumps(config or {}).encode()}
    if index:
        names = sorted(tensors)
        half = {n: tensors[n] for n in names[: len(names) // 2]}
        rest = {n: tensors[n] for n in names[len(names) // 2 :]}
        files["a.safetensors"] = _safetensors(half)
        files["b.safetensors"] = _safetensors(rest)
        weight_map = {**dict.fromkeys(half, "a.safetensors"), **dict.fromkeys(rest, "b.safetensors")}
        files["model.safetensors.index.json"] = json.dumps({"weight_map": weight_map}).encode()
    else:
        files["model.safetensors"] = _safetensors(tensors)
    return MemoryFiles(files)


def _arr(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


@pytest.mark.parametrize("index", [False, True])
@pytest.mark.parametrize("prefix", ["model.", "", "model.language_model.", "language_model.model."])
def test_the_embedding_is_found_under_each_familys_prefix_and_read_exactly(prefix: str, index: bool) -> None:
    embed, filler = _arr(16, 8), _arr(64, 64, seed=1)
    files = _model({f"{prefix}embed_tokens.weight": embed, f"{prefix}layers.0.w": filler, "z": _arr(2)}, index=index)
    reader = TensorReader(files)
    location = reader.embedding()
    assert location is not None and location.name == f"{prefix}embed_tokens.weight"
    assert location.dtype == "F32" and location.shape == (16, 8) and location.nbytes == embed.nbytes
    data = reader.read(location)
    assert bytes(data) == embed.tobytes()
    shard = location.file
    header = 8 + int.from_bytes(files.files[shard][:8], "little")
    # The header and the tensor, nothing of the filler.
    assert files.read[shard] == header + embed.nbytes


def test_a_name_ending_in_embed_tokens_is_the_last_resort() -> None:
    reader = TensorReader(_model({"backbone.text.embed_tokens.weight": _arr(4, 4)}))
    location = reader.embedding()
    assert location is not None and location.name == "backbone.text.embed_tokens.weight"


@pytest.mark.parametrize(("config", "expected"), [
    ({"tie_word_embeddings": True}, "model.embed_tokens.weight"),
    ({}, None),  # config classes disagree on the default: no head is assumed
    ({"text_config": {"tie_word_embeddings": True}}, "model.embed_tokens.weight"),
    ({"tie_word_embeddings": False}, None),
])
def test_a_missing_lm_head_is_the_embedding_where_tied(config: dict[str, Any], expected: str | None) -> None:
    reader = TensorReader(_model({"model.embed_tokens.weight": _arr(4, 4), "model.norm.weight": _arr(4)}, config))
    head = reader.output_head()
    assert (head.name if head is not None else None) == expected
    assert reader.final_norm() is not None


def test_a_stored_lm_head_wins_over_a_tie() -> None:
    reader = TensorReader(_model({"model.embed_tokens.weight": _arr(4, 4), "lm_head.weight": _arr(4, 4)},
                                 {"tie_word_embeddings": True}))
    head = reader.output_head()
    assert head is not None and head.name == "lm_head.weight"


def test_the_limit_is_checked_before_any_byte_of_the_tensor_is_read() -> None:
    files = _model({"model.embed_tokens.weight": _arr(32, 32)})
    reader = TensorReader(files)
    location = reader.embedding()
    assert location is not None
    before = dict(files.read)
    with pytest.raises(TensorReadError, match=r"4096 bytes .*above the 4095-byte limit of this read"):
        reader.read(location, max_bytes=4095)
    assert files.read == before
    assert len(reader.read(location, max_bytes=4096)) == 4096


def test_a_file_that_ends_early_is_cut_short() -> None:
    files = _model({"model.embed_tokens.weight": _arr(8, 8)})
    reader = TensorReader(files)
    location = reader.embedding()
    assert location is not None
    files.files["model.safetensors"] = files.files["model.safetensors"][:-10]  # shrank after it was located
    with pytest.raises(TensorReadError, match="cut short"):
        reader.read(location)


@pytest.mark.parametrize("shard", ["../outside.safetensors", "/etc/passwd", "sub/a.safetensors", "missing.safetensors"])
def test_an_index_pointing_outside_the_model_is_refused(shard: str) -> None:
    files = _model({"model.embed_tokens.weight": _arr(2, 2)})
    files.files["model.safetensors.index.json"] = json.dumps({"weight_map": {"model.embed_tokens.weight": shard}}
                                                             ).encode()
    with pytest.raises(TensorReadError, match="not among the model's files"):
        TensorReader(files).embedding()


def test_the_cli_default_is_the_readers() -> None:
    from specprobe.cli import smoke

    assert smoke.DEFAULT_MAX_TENSOR_BYTES == DEFAULT_MAX_TENSOR_BYTES


# -- hostile input ------------------------------------------------------------------------------------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
_entry = st.fixed_dictionaries({}, optional={
    "dtype": st.sampled_from([*DTYPE_SIZES, "F4", "", "f32"]) | _json,
    "shape": st.lists(st.integers(min_value=-2, max_value=2**33), max_size=10) | _json,
    "data_offsets": st.lists(st.integers(min_value=-2, max_value=2**65), max_size=3) | _json,
})



@st.composite
def _consistent(draw: Any) -> dict[str, Any]:
    """An entry whose byte span is its dtype x shape (perhaps shifted or stretched by one byte)."""
    dtype = draw(st.sampled_from(sorted(DTYPE_SIZES)))
    shape = draw(st.lists(st.integers(min_value=0, max_value=4), max_size=2))
    begin = draw(st.integers(min_value=0, max_value=64))
    end = begin + math.prod(shape) * DTYPE_SIZES[dtype] + draw(st.sampled_from([0, 0, 0, 1, -1]))
    return {"dtype": dtype, "shape": shape, "data_offsets": [begin, end]}


def _check(location: Any, data_start: int, file_size: int) -> None:
    assert location.dtype in DTYPE_SIZES
    assert location.nbytes == math.prod(location.shape) * DTYPE_SIZES[location.dtype]
    assert data_start <= location.begin and location.begin + location.nbytes <= file_size


class _SizedShard(ModelFiles):
    """One shard whose listing says ``file_size`` bytes and whose bytes are ``head`` (the 8-byte length and
    the header): locating a tensor reads no more, and a file of terabytes costs nothing."""

    def __init__(self, head: bytes, file_size: int) -> None:
        self.label = "sized"
        self.head, self.size = head, file_size

    def listing(self) -> dict[str, int | None]:
        return {"x.safetensors": self.size}

    def read_file(self, name: str, *, max_bytes: int) -> bytes:
        raise FileNotFoundError(name)

    def read_range(self, name: str, begin: int, length: int) -> bytes:
        return self.head[begin : begin + length]


def _locate_entry(entry: Any, padding: int, file_size: int) -> None:
    """Locate tensor "t" described by ``entry`` in a header of ``padding`` spare bytes."""
    raw = json.dumps({"t": entry}).encode() + b" " * padding
    data_start = 8 + len(raw)
    try:
        location = TensorReader(_SizedShard(struct.pack("<Q", len(raw)) + raw, file_size)).locate(["t"])
    except TensorReadError as exc:
        assert "\n" not in str(exc)
        return
    assert location is not None
    _check(location, data_start, file_size)
    event("located")


@settings(max_examples=300, deadline=None)
@given(entry=_entry | _json, padding=st.integers(min_value=0, max_value=2**10),
       file_size=st.integers(min_value=0, max_value=2**40))
def test_any_header_entry_gives_a_checked_location_or_the_readers_error(entry: Any, padding: int,
                                                                        file_size: int) -> None:
    _locate_entry(entry, padding, file_size)


@settings(max_examples=200, deadline=None)
@given(entry=_consistent(), padding=st.integers(min_value=0, max_value=64),
       file_size=st.integers(min_value=0, max_value=512))
def test_entries_near_the_rules_give_a_checked_location_or_the_readers_error(entry: Any, padding: int,
                                                                             file_size: int) -> None:
    _locate_entry(entry, padding, file_size)


@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=64) | _json.map(lambda v: json.dumps(v).encode()))
def test_any_index_or_header_bytes_parse_or_give_the_readers_error(raw: bytes) -> None:
    with contextlib.suppress(TensorReadError):
        parse_weight_map(raw, "index.json")
    # The same bytes as a shard's first bytes (a declared length and a header) and as a header.
    for shard in (raw, struct.pack("<Q", len(raw)) + raw):
        try:
            names = TensorReader(_SizedShard(shard, len(shard) + 100)).names()
        except TensorReadError as exc:
            assert "\n" not in str(exc)
            continue
        assert all(isinstance(name, str) for name in names)
        event("parsed")


@settings(max_examples=200, deadline=None)
@given(
    header=st.dictionaries(st.sampled_from(["model.embed_tokens.weight", "lm_head.weight", "model.norm.weight",
                                            "x.embed_tokens.weight", "__metadata__"]), _consistent() | _entry | _json,
                          max_size=4),
    declared=st.none() | st.integers(min_value=0, max_value=2**64 - 1),
    data=st.binary(min_size=64, max_size=256),
    index=st.none() | _json,
    config=_json,
    cut=st.just(0) | st.integers(min_value=0, max_value=64),
)
def test_any_model_files_give_a_tensor_or_the_readers_error(header: dict[str, Any], declared: int | None, data: bytes,
                                                            index: Any, config: Any, cut: int) -> None:
    raw = json.dumps(header).encode()
    shard = struct.pack("<Q", len(raw) if declared is None else declared) + raw + data
    files = {"model.safetensors": shard[: len(shard) - cut] if cut < len(shard) else b"",
             "config.json": json.dumps(config).encode()}
    if index is not None:
        files["model.safetensors.index.json"] = json.dumps(index).encode()
    reader = TensorReader(MemoryFiles(files))
    for find in (reader.embedding, reader.output_head, reader.final_norm):
        try:
            location = find()
            if location is not None:
                _check(location, 8, len(files["model.safetensors"]))
                assert len(reader.read(location)) == location.nbytes
                event("read a tensor")
        except TensorReadError as exc:
            assert "\n" not in str(exc)

