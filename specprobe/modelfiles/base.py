"""A model's files, wherever they are: the interface every reader of checkpoints and configs uses.

A model is a local folder or a Hugging Face hub repository at one commit. Rules never open paths of
their own; they ask a ``ModelFiles`` for the top-level listing, a small file whole (config.json, the
shard index) or a byte range (a safetensors header, the d2t/t2d tensors). A local folder answers from
disk; a hub repository answers over HTTP with Range requests and keeps what it read, keyed by the
commit, so that an offline re-run gives the same verdict.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import StrEnum
from pathlib import Path

from specprobe.findings import SpecprobeError


class Unavailable(StrEnum):
    """Why a hub model could not be examined; decides the rule (and so the severity) that says so."""

    # The hub refuses this machine: gated, private, no such repository or revision, a refused token.
    ACCESS = "access"
    # The hub could not be asked or did not answer usably: timeout, no connection, offline and not
    # cached, a file missing from the commit, an answer outside specprobe's bounds.
    NOT_EXAMINED = "not-examined"
    # The hub is switched off for this run (``hub = "off"``, or HF_HUB_OFFLINE) and the model is not in
    # the local caches: not examined by the user's choice.
    OFF = "off"


class ModelUnavailableError(SpecprobeError):
    """A model named by hub id that cannot be read; the message is one sentence with advice.

    A SpecprobeError, so that a command with nothing else to say about the model (matrix, fix) exits 2
    with this line; check and gate turn it into a finding for the model instead.
    """

    def __init__(self, spec: str, kind: Unavailable, message: str) -> None:
        super().__init__(message)
        self.spec = spec
        self.kind = kind


class TensorReadError(SpecprobeError):
    """One tensor of a model that cannot be located or read; the message is one line. ``kind`` says why
    where the hub is the cause (access, not examined, off), None where the model's own files are."""

    def __init__(self, message: str, kind: Unavailable | None = None) -> None:
        super().__init__(message)
        self.kind = kind


class ModelFiles(ABC):
    """The files of one model at one version; every read is bounded and nothing is ever executed."""

    #: What reports call the model: the folder, or ``owner/name`` as written.
    label: str
    #: The hub commit that was judged (None for a local folder).
    commit: str | None = None
    #: The hub repository id (None for a local folder).
    repo_id: str | None = None
    #: The revision as written (branch, tag or commit; None for a local folder or the default branch).
    revision: str | None = None

    @property
    def folder(self) -> Path | None:
        """A folder on this machine holding every file (a local folder or a complete cached snapshot);
        None when the files stay on the hub. Readers that need whole tensors (--deep, fix, exact) need it."""
        return None

    @abstractmethod
    def listing(self) -> dict[str, int | None]:
        """The model's top-level regular files and their sizes (None when unknown)."""

    @abstractmethod
    def read_file(self, name: str, *, max_bytes: int) -> bytes:
        """The whole of a small file. OSError (``FileNotFoundError`` when absent) when it cannot be read;
        ``UntrustedInputError`` when it is larger than ``max_bytes``."""

    @abstractmethod
    def read_range(self, name: str, begin: int, length: int) -> bytes:
        """``length`` bytes of ``name`` from offset ``begin``; OSError when they cannot be read."""

    def tensor_reads(self) -> ModelFiles:
        """These files as read to locate single tensors (shard index, headers): the same files, charged
        to their own budget on the hub (see ``specprobe.checkpoint.tensors``)."""
        return self

    def read_tensor_data(self, name: str, begin: int, length: int, *, max_bytes: int, key: str) -> bytearray:
        """``length`` bytes of ``name`` from ``begin``: one whole tensor (``key`` names it), which may be
        gigabytes; TensorReadError above ``max_bytes``, OSError when the file cannot be read. Shorter at
        the end of a file that ends early (the caller says so)."""
        if length > max_bytes:
            raise TensorReadError(f"{key} of {self.describe()} is {length} bytes, above the {max_bytes}-byte limit of "
                                  "this read")
        return bytearray(self.read_range(name, begin, length))

    def local_path(self, name: str) -> Path | None:
        """A path on this machine holding the whole of ``name`` once it has been read (for readers that
        take paths: a target's config.json); None when there is none."""
        return None

    def describe(self) -> str:
        """The model as a report names it: the label, and the commit for a hub repository."""
        if self.commit is None:
            return self.label
        return f"{self.label}@{self.commit[:12]}" if self.revision is None else f"{self.label}@{self.revision}"
