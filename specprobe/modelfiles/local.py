"""A model in a folder on this machine: its files read from disk through the trust boundary."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import cast

from specprobe.modelfiles.base import ModelFiles
from specprobe.untrusted.files import open_regular, read_bounded


class LocalFiles(ModelFiles):
    """A local folder (or a Hugging Face cache snapshot): only regular files inside it are opened."""

    def __init__(self, root: Path, *, label: str | None = None, commit: str | None = None,
                 repo_id: str | None = None, revision: str | None = None) -> None:
        self.root = root
        self.label = label if label is not None else str(root)
        self.commit = commit
        self.repo_id = repo_id
        self.revision = revision

    @property
    def folder(self) -> Path:
        return self.root

    def listing(self) -> dict[str, int | None]:
        found: dict[str, int | None] = {}
        try:
            with os.scandir(self.root) as entries:
                for entry in entries:
                    try:
                        info = entry.stat()  # follows a link, as an engine opening the file would
                    except OSError:
                        continue
                    if stat.S_ISREG(info.st_mode):
                        found[entry.name] = info.st_size
        except OSError:
            return {}
        return found

    def read_file(self, name: str, *, max_bytes: int) -> bytes:
        return read_bounded(self.root / name, max_bytes=max_bytes, what=name)

    def read_range(self, name: str, begin: int, length: int) -> bytes:
        with open_regular(self.root / name) as handle:
            handle.seek(begin)
            return handle.read(length)

    def read_tensor_data(self, name: str, begin: int, length: int, *, max_bytes: int, key: str) -> bytearray:
        # Read once into the buffer the tensor will share (torch.frombuffer), not through an intermediate copy.
        if length > max_bytes:
            return super().read_tensor_data(name, begin, length, max_bytes=max_bytes, key=key)
        with open_regular(self.root / name) as handle:
            available = max(0, os.fstat(handle.fileno()).st_size - begin)
            data = bytearray(min(length, available))
            handle.seek(begin)
            view = memoryview(data)
            filled = 0
            while filled < len(data):
                count = cast("io.BufferedReader", handle).readinto(view[filled:])
                if not count:
                    break
                filled += count
        return data if filled == len(data) else data[:filled]

    def local_path(self, name: str) -> Path:
        return self.root / name
