"""A streaming safetensors writer: a new header, tensor bytes copied range by range, never loaded.

``fix`` renames tensors, adds small derived ones (d2t, t2d) and takes rows from a target's files; the
data of every other tensor is copied byte for byte from its source file into the new file's data
region at a recomputed offset. Copies go through ``os.copy_file_range`` (in-kernel, no user-space
buffer) with a bounded chunked read/write fallback, and holes of sparse sources stay holes
(``SEEK_DATA``/``SEEK_HOLE``), so a 4 GB drafter costs what ``cp`` costs and a few MB of memory.

Only what specprobe read itself is written: sources are opened with ``open_regular`` (regular files
only) and every range was validated by the header reader before it gets here.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import os
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from specprobe.checkpoint.safetensors_header import DTYPE_SIZES
from specprobe.untrusted.files import open_regular

# Bytes moved per system call / per buffered read: large enough to reach disk speed, small enough that
# the fallback's buffer stays a rounding error of the 100 MB memory budget.
CHUNK = 8 * 1024 * 1024
_HOLE_CHUNK = bytes(CHUNK)
PAGE = 4096


@dataclass(frozen=True)
class ByteRange:
    """``nbytes`` bytes of ``path`` starting at absolute offset ``begin``."""

    path: Path
    begin: int
    nbytes: int


@dataclass(frozen=True)
class OutTensor:
    """One tensor of the new file: its bytes are ``ranges`` (concatenated, streamed) or ``data``."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    ranges: tuple[ByteRange, ...] = ()
    data: bytes | None = None
    # A shadow tensor is declared in the header but its bytes are left as a hole: a header-true copy
    # that costs nothing, for checking a plan without writing its data.
    shadow: bool = False

    @property
    def nbytes(self) -> int:
        size = DTYPE_SIZES[self.dtype]
        for dim in self.shape:
            size *= dim
        return size

    def __post_init__(self) -> None:
        if self.shadow:
            return
        given = len(self.data) if self.data is not None else sum(r.nbytes for r in self.ranges)
        if given != self.nbytes:
            raise ValueError(f"tensor {self.name!r}: {given} bytes given for {self.dtype}{list(self.shape)}")


@dataclass
class WriteResult:
    """What was written: the file size and, per tensor, its data's offsets in the new file."""

    path: Path
    size: int
    offsets: dict[str, tuple[int, int]] = field(default_factory=dict)


def encode_header(
    tensors: Sequence[OutTensor], metadata: Mapping[str, str] | None, *, page_offset: int | None = None
) -> tuple[bytes, int]:
    """The header bytes (8-byte length + JSON padded with spaces to 8-byte alignment, as the reference
    writer does) and the data region's length.

    ``page_offset``: pad further so that the data region starts at that offset within a 4 KiB page. When
    it is the source's own, every tensor keeps its position within a page, and the kernel copies whole
    pages instead of shifting every byte (a renamed header is rarely the same length as the old one)."""
    header: dict[str, object] = {}
    if metadata:
        header["__metadata__"] = dict(metadata)
    offset = 0
    for tensor in tensors:
        if tensor.name in header or tensor.name == "__metadata__":
            raise ValueError(f"tensor name {tensor.name!r} is used twice")
        header[tensor.name] = {
            "dtype": tensor.dtype,
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + tensor.nbytes],
        }
        offset += tensor.nbytes
    encoded = json.dumps(header, separators=(",", ":")).encode("utf-8")
    encoded += b" " * (-len(encoded) % 8)
    if page_offset is not None and page_offset % 8 == 0:
        encoded += b" " * ((page_offset - 8 - len(encoded)) % PAGE)
    return struct.pack("<Q", len(encoded)) + encoded, offset


def _data_segments(fd: int, begin: int, end: int) -> Iterator[tuple[int, int]]:
    """(start, stop) of the parts of [begin, end) that hold data; holes are skipped.

    Without SEEK_DATA support (or on an error) the whole range is one segment: correct, only slower."""
    seek_data = getattr(os, "SEEK_DATA", None)
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if seek_data is None or seek_hole is None:
        yield begin, end
        return
    position = begin
    while position < end:
        try:
            start = os.lseek(fd, position, seek_data)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # only a hole from here to the end of the file
                return
            yield position, end
            return
        if start >= end:
            return
        try:
            stop = min(os.lseek(fd, start, seek_hole), end)
        except OSError:
            stop = end
        yield start, stop
        position = stop


def _copy_range(src: int, src_offset: int, dst: int, dst_offset: int, length: int) -> None:
    """Copy ``length`` bytes between descriptors at explicit offsets (no shared file position)."""
    copy_file_range = getattr(os, "copy_file_range", None)
    while length > 0:
        step = min(length, CHUNK)
        copied = 0
        if copy_file_range is not None:
            try:
                copied = copy_file_range(src, dst, step, src_offset, dst_offset)
            except OSError as exc:
                if exc.errno not in (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF):
                    raise
                copy_file_range = None
        if copied <= 0:
            chunk = os.pread(src, step, src_offset)
            if not chunk:
                raise OSError(errno.EIO, "source ended before the tensor's last byte")
            copied = os.pwrite(dst, chunk, dst_offset)
        src_offset += copied
        dst_offset += copied
        length -= copied


def _stream(src: int, source: ByteRange, dst: int, dst_offset: int) -> None:
    end = source.begin + source.nbytes
    for start, stop in _data_segments(src, source.begin, end):
        _copy_range(src, start, dst, dst_offset + (start - source.begin), stop - start)


def write_streamed(
    path: Path,
    tensors: Sequence[OutTensor],
    metadata: Mapping[str, str] | None = None,
    *,
    after_tensor: Callable[[str], None] | None = None,
    page_offset: int | None = None,
) -> WriteResult:
    """Write ``tensors`` in order to the new file ``path`` (which must not exist).

    The file is sized first (holes everywhere), then each tensor's bytes land at their offset: a
    source's holes are never written, so the copy stays as sparse as its source. Like ``cp``, the data
    is left to the page cache (no fsync): the caller publishes the folder only once it is complete. ``after_tensor`` is
    called with each name once its bytes are written (progress, and a test's interruption point).
    """
    header, data_len = encode_header(tensors, metadata, page_offset=page_offset)
    data_start = len(header)
    result = WriteResult(path=path, size=data_start + data_len)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o644)
    sources: dict[Path, IO[bytes]] = {}
    try:
        os.pwrite(fd, header, 0)
        os.ftruncate(fd, result.size)
        offset = data_start
        for tensor in tensors:
            result.offsets[tensor.name] = (offset, offset + tensor.nbytes)
            if tensor.shadow:
                pass
            elif tensor.data is not None:
                if tensor.data.strip(b"\x00"):
                    os.pwrite(fd, tensor.data, offset)
            else:
                position = offset
                for source in tensor.ranges:
                    handle = sources.get(source.path)
                    if handle is None:
                        handle = sources[source.path] = open_regular(source.path)
                    _stream(handle.fileno(), source, fd, position)
                    position += source.nbytes
            offset += tensor.nbytes
            if after_tensor is not None:
                after_tensor(tensor.name)
    finally:
        os.close(fd)
        for handle in sources.values():
            handle.close()
    return result


def sha256_range(path: Path, begin: int, nbytes: int) -> str:
    """sha256 of a byte range, read in bounded chunks; holes read as zeros without a read."""
    digest = hashlib.sha256()
    with open_regular(path) as handle:
        fd = handle.fileno()
        segments = list(_data_segments(fd, begin, begin + nbytes))
        if not segments:
            return zeros_sha256(nbytes)  # a tensor that is all hole: the same digest on both sides
        position = begin
        for start, stop in segments:
            _zeros(digest, start - position)
            cursor = start
            while cursor < stop:
                chunk = os.pread(fd, min(CHUNK, stop - cursor), cursor)
                if not chunk:
                    raise OSError(errno.EIO, f"{path.name} ends inside a tensor")
                digest.update(chunk)
                cursor += len(chunk)
            position = stop
        _zeros(digest, begin + nbytes - position)
    return digest.hexdigest()


def sha256_ranges(ranges: Sequence[ByteRange]) -> str:
    """sha256 of several ranges concatenated (a tensor assembled from rows of another file)."""
    if len(ranges) == 1:
        only = ranges[0]
        return sha256_range(only.path, only.begin, only.nbytes)
    digest = hashlib.sha256()
    handles: dict[Path, int] = {}
    opened = []
    try:
        for part in ranges:
            fd = handles.get(part.path)
            if fd is None:
                handle = open_regular(part.path)
                opened.append(handle)
                fd = handles[part.path] = handle.fileno()
            position, left = part.begin, part.nbytes
            while left > 0:
                chunk = os.pread(fd, min(CHUNK, left), position)
                if not chunk:
                    raise OSError(errno.EIO, f"{part.path.name}: a row range could not be read")
                digest.update(chunk)
                position += len(chunk)
                left -= len(chunk)
    finally:
        for handle in opened:
            handle.close()
    return digest.hexdigest()


@functools.lru_cache(maxsize=64)
def zeros_sha256(count: int) -> str:
    """sha256 of ``count`` zero bytes, computed once per size (holes of a sparse source and its copy)."""
    digest = hashlib.sha256()
    _zeros(digest, count)
    return digest.hexdigest()


def _zeros(digest: hashlib._Hash, count: int) -> None:
    while count > 0:
        step = min(count, CHUNK)
        digest.update(_HOLE_CHUNK[:step] if step < CHUNK else _HOLE_CHUNK)
        count -= step
