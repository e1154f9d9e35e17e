"""The header-only reader and the numpy writer against the reference safetensors implementation."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import save_file

from specprobe.checkpoint.safetensors_header import HeaderError, read_header, read_tensor
from specprobe.checkpoint.writer import TensorSpec, float32_to_bf16, write_safetensors


def test_reader_parses_files_written_by_the_reference_library(tmp_path: Path) -> None:
    tensors = {
        "d2t": np.arange(10, dtype=np.int64) * 3,
        "t2d": np.array([True, False, True]),
        "fc.weight": np.ones((4, 12), dtype=np.float16),
    }
    path = tmp_path / "model.safetensors"
    save_file(tensors, str(path), metadata={"format": "pt"})

    header = read_header(path)

    assert not header.problems
    assert header.metadata == {"format": "pt"}
    assert {n: (e.dtype, e.shape) for n, e in header.tensors.items()} == {
        "d2t": ("I64", (10,)),
        "t2d": ("BOOL", (3,)),
        "fc.weight": ("F16", (4, 12)),
    }
    np.testing.assert_array_equal(read_tensor(header.tensors["d2t"], path, max_bytes=1024), tensors["d2t"])
    np.testing.assert_array_equal(read_tensor(header.tensors["t2d"], path, max_bytes=1024), tensors["t2d"])


def test_writer_output_loads_in_the_reference_library(tmp_path: Path) -> None:
    values = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
    path = tmp_path / "model.safetensors"
    write_safetensors(path, {"a": values, "d2t": np.array([0, 5, 9], dtype=np.int64), "bf": float32_to_bf16(values)})

    # numpy has no bfloat16, so the reference library reads the other two and lists all three.
    with safe_open(str(path), framework="numpy") as reference:
        assert sorted(reference.keys()) == ["a", "bf", "d2t"]
        np.testing.assert_array_equal(reference.get_tensor("a"), values)
        np.testing.assert_array_equal(reference.get_tensor("d2t"), [0, 5, 9])
    header = read_header(path)
    bf16 = read_tensor(header.tensors["bf"], path, max_bytes=1024)
    np.testing.assert_allclose(bf16, values, rtol=1e-2)


def test_sparse_tensors_take_no_disk_blocks(tmp_path: Path) -> None:
    path = tmp_path / "big.safetensors"
    size = write_safetensors(path, {"lm_head.weight": TensorSpec("BF16", (32000, 7168)), "d2t": np.zeros(4, np.int64)})

    assert path.stat().st_size == size > 32000 * 7168 * 2
    assert path.stat().st_blocks * 512 < 1024 * 1024, "the hole was written out"
    assert read_header(path).tensors["lm_head.weight"].shape == (32000, 7168)


@pytest.mark.parametrize(
    ("raw", "kind"),
    [
        (b"\x01\x02", "truncated"),
        (struct.pack("<Q", 2**60) + b"{}", "header"),
        (struct.pack("<Q", 4) + b"[1] ", "header"),
        (struct.pack("<Q", 8) + b"\xff\xfe{}    ", "header"),
        (struct.pack("<Q", 40) + b'{"x": {"dtype": "F32", "shape": [-1]}}  ', "header"),
    ],
)
def test_hostile_headers_raise_header_error(tmp_path: Path, raw: bytes, kind: str) -> None:
    path = tmp_path / "bad.safetensors"
    path.write_bytes(raw)

    with pytest.raises(HeaderError) as caught:
        read_header(path)

    assert caught.value.kind == kind


def test_bounded_read_refuses_large_tensors(tmp_path: Path) -> None:
    path = tmp_path / "m.safetensors"
    write_safetensors(path, {"d2t": np.zeros(1000, np.int64)})

    with pytest.raises(HeaderError, match="limit"):
        read_tensor(read_header(path).tensors["d2t"], path, max_bytes=100)
