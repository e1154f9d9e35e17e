"""One tensor of a model, read alone: a target's input embedding, final norm or lm_head, wherever the
model is (a folder, a Hugging Face cache snapshot, a hub repository at one commit).

The shard index (``*.safetensors.index.json``, read whole) says which shard holds the tensor; that shard's
safetensors header (its 8-byte length, then the JSON, by two Range reads on the hub) gives its dtype, shape
and byte offsets; then exactly those bytes are read, by one Range request on the hub. No other tensor and
no other shard's data travels. Everything read is checked as untrusted input: the index and header within
bounds, the entry's dtype x shape equal to its byte span, the span inside the file, and the bytes that
came equal in number to it. A hub repository's index and headers are charged to a budget of their own
(``MAX_LOCATE_BYTES``), apart from the 3 MiB the checks spend; the tensor's bytes to the budget the caller
sets per read (``max_bytes``, default ``DEFAULT_MAX_TENSOR_BYTES``).

The bytes are read into memory (a ``bytearray`` the caller's tensor can share), and on the hub also kept in
specprobe's hub cache under the commit and a hash of the shard and tensor name, so that an offline re-run
(``HF_HUB_OFFLINE=1``) reads them from there without a request. Memory rather than a temporary file: the
caller holds the tensor in memory anyway (an embedding layer), so a file would add a copy, not save one.

Headers are parsed by the checks' own bounded reader (``checkpoint.safetensors_header.read_header_from``,
the one parser for local files and hub Range reads; the safetensors library needs the whole file, and
this module must not import torch: check, lint and gate import the package).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from specprobe.checkpoint.safetensors_header import HeaderError, SafetensorsHeader, read_header_from
from specprobe.hfconfig import MAX_CONFIG_BYTES
from specprobe.modelfiles.base import ModelFiles, TensorReadError
from specprobe.untrusted.files import UntrustedInputError, parse_json

# The default ceiling of one tensor read: 4 GiB holds the largest bf16 input embeddings drafters are
# trained against (Kimi-K2.5's 163840 x 7168 is 2.35 GB, Llama-3.1-8B's 128256 x 4096 1.05 GB); a float32
# one of Kimi's size (4.7 GB) needs a caller to allow more.
DEFAULT_MAX_TENSOR_BYTES = 4 * 1024**3
# A shard index is ~100 bytes per tensor: the largest public checkpoints (~100k tensors) need 10-15 MB.
MAX_INDEX_BYTES = 16 * 1024 * 1024
# One shard header: ~100 bytes per tensor, a few thousand tensors per shard of the largest checkpoints.
MAX_HEADER_BYTES = 8 * 1024 * 1024
# Shards whose headers are searched when there is no index (an index names the one shard to read).
MAX_UNINDEXED_SHARDS = 16
# Where a model keeps the tensors a drafter borrows, by the checkpoint layouts of the families drafters are
# trained for (Llama/Qwen/DeepSeek/Kimi text models, their multimodal wrappers, GPT-2 style), in order.
EMBEDDING_NAMES = (
    "model.embed_tokens.weight",
    "embed_tokens.weight",
    "model.language_model.embed_tokens.weight",
    "language_model.model.embed_tokens.weight",
    "model.language_model.model.embed_tokens.weight",
    "transformer.wte.weight",
)
NORM_NAMES = (
    "model.norm.weight",
    "norm.weight",
    "model.language_model.norm.weight",
    "language_model.model.norm.weight",
)
HEAD_NAMES = ("lm_head.weight", "language_model.lm_head.weight", "model.language_model.lm_head.weight")
# Tried after the names above: any tensor whose name ends so (the first in sorted order).
EMBEDDING_SUFFIX = "embed_tokens.weight"


@dataclass(frozen=True)
class TensorLocation:
    """Where one tensor's bytes are: ``file`` (a top-level shard), absolute offset ``begin``, ``nbytes``."""

    name: str
    file: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    nbytes: int

    def describe(self) -> str:
        return f"{self.name} ({self.dtype} {list(self.shape)}, {self.nbytes} bytes in {self.file})"


def pick_name(available: Iterable[str], names: Sequence[str], suffix: str | None = None) -> str | None:
    """The first of ``names`` present, else the first present name ending in ``suffix``."""
    present = set(available)
    for name in names:
        if name in present:
            return name
    if suffix:
        return next((n for n in sorted(present) if n.endswith(suffix)), None)
    return None


def _plain_file(name: Any) -> bool:
    # Engines and loaders read shards from the model's top level; anything else is not followed.
    if not isinstance(name, str) or not name or "\0" in name or "\\" in name or name.startswith("~"):
        return False
    parts = PurePosixPath(name).parts
    return len(parts) == 1 and parts[0] not in (".", "..") and not name.startswith("/")


def parse_weight_map(raw: bytes, what: str) -> dict[str, str]:
    """A shard index's ``weight_map`` (tensor name -> shard file); TensorReadError when unusable."""
    try:
        index = parse_json(raw, what=what).value
    except UntrustedInputError as exc:
        raise TensorReadError(str(exc)) from None
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(weight_map, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                    for k, v in weight_map.items()):
        raise TensorReadError(f"{what} has no weight_map of tensor name -> shard file")
    return weight_map


def entry_location(header: SafetensorsHeader, name: str, file: str) -> TensorLocation:
    """Where ``header`` (of ``file``) puts ``name``, checked: a known dtype, dtype x shape equal to the
    byte span of its ``data_offsets``, and the span inside the file. TensorReadError otherwise (the
    header's problems with other tensors do not stop this one from being read)."""
    where = f"{name} in {file}"
    entry = header.tensors.get(name)
    if entry is None:
        raise TensorReadError(f"{where}: the header does not describe it")
    problem = next((p for p in header.problems if p.tensor == name and p.kind in ("dtype", "size", "truncated")),
                   None)
    if problem is not None and problem.kind == "truncated":
        raise TensorReadError(f"{where}: its bytes run past the end of the file ({problem.message})")
    if problem is not None:
        raise TensorReadError(f"{where}: {problem.message}")
    return TensorLocation(name, file, entry.dtype, entry.shape, entry.begin, entry.nbytes)


def _read(action: Any, what: str) -> Any:
    """Run one read; an OSError or an oversized file becomes TensorReadError (the hub's with its kind)."""
    try:
        return action()
    except TensorReadError:
        raise
    except UntrustedInputError as exc:
        raise TensorReadError(str(exc)) from None
    except OSError as exc:
        error = getattr(exc, "error", None)  # the hub reader's classified failure
        kind = getattr(error, "kind", None)
        reason = getattr(error, "reason", None) or exc.strerror or str(exc)
        raise TensorReadError(f"{what}: {reason}", kind) from None


class TensorReader:
    """Locates and reads single tensors of one model; each shard index and header is read once."""

    def __init__(self, files: ModelFiles) -> None:
        self.files = files
        self._reads = files.tensor_reads()
        self._listing: dict[str, int | None] | None = None
        self._weight_map: dict[str, str] | None = None
        self._indexed: bool | None = None
        self._shards: dict[str, SafetensorsHeader] = {}
        self._config: dict[str, Any] | None = None

    def _files(self) -> dict[str, int | None]:
        if self._listing is None:
            self._listing = self._reads.listing()
        return self._listing

    def _index(self) -> dict[str, str] | None:
        if self._indexed is None:
            listing = self._files()
            indexes = sorted(n for n in listing if n.endswith(".safetensors.index.json"))
            chosen = "model.safetensors.index.json" if "model.safetensors.index.json" in indexes else (
                indexes[0] if indexes else None)
            if chosen is not None:
                raw = _read(lambda: self._reads.read_file(chosen, max_bytes=MAX_INDEX_BYTES), chosen)
                self._weight_map = parse_weight_map(raw, chosen)
            self._indexed = chosen is not None
        return self._weight_map

    def _shard(self, file: str) -> SafetensorsHeader:
        if file in self._shards:
            return self._shards[file]
        what = f"{file} of {self.files.describe()}"
        if not _plain_file(file) or file not in self._files():
            raise TensorReadError(f"{what} is not among the model's files")
        prefix = _read(lambda: self._reads.read_range(file, 0, 8), what)
        # A hub listing without sizes: the Range answer told it.
        self._listing = self._reads.listing()
        size = self._listing.get(file)
        if size is None:
            raise TensorReadError(f"{what}: its size is unknown")

        def read_at(begin: int, length: int) -> bytes:
            if begin == 0 and length <= len(prefix):
                return bytes(prefix[:length])
            data: bytes = _read(lambda: self._reads.read_range(file, begin, length), what)
            return data

        try:
            header = read_header_from(read_at, size, Path(file), max_header_bytes=MAX_HEADER_BYTES)
        except HeaderError as exc:
            raise TensorReadError(f"{what}: {exc}") from None
        self._shards[file] = header
        return header

    def names(self) -> dict[str, str]:
        """Every tensor name -> the shard holding it (the index's, else the headers' of at most
        ``MAX_UNINDEXED_SHARDS`` shards)."""
        weight_map = self._index()
        if weight_map is not None:
            return weight_map
        shards = sorted(n for n in self._files() if n.endswith(".safetensors"))
        if len(shards) > MAX_UNINDEXED_SHARDS:
            raise TensorReadError(
                f"{self.files.describe()} has {len(shards)} safetensors files and no index; specprobe searches the "
                f"headers of at most {MAX_UNINDEXED_SHARDS}"
            )
        found: dict[str, str] = {}
        for file in shards:
            for name in self._shard(file).tensors:
                found.setdefault(name, file)
        return found

    def locate(self, names: Sequence[str], suffix: str | None = None) -> TensorLocation | None:
        """The first of ``names`` (else one ending in ``suffix``) the model holds, checked; None when none."""
        where = self.names()
        name = pick_name(where, names, suffix)
        if name is None:
            return None
        return entry_location(self._shard(where[name]), name, where[name])

    def read(self, location: TensorLocation, *, max_bytes: int = DEFAULT_MAX_TENSOR_BYTES) -> bytearray:
        """Exactly the tensor's bytes: refused above ``max_bytes`` before anything is asked, and a
        TensorReadError when fewer came than dtype x shape needs."""
        if location.nbytes > max_bytes:
            raise TensorReadError(
                f"{location.name} of {self.files.describe()} is {location.nbytes} bytes ({location.dtype} "
                f"{list(location.shape)}), above the {max_bytes}-byte limit of this read"
            )
        data: bytearray = _read(
            lambda: self._reads.read_tensor_data(
                location.file, location.begin, location.nbytes, max_bytes=max_bytes, key=location.name
            ),
            f"{location.name} of {self.files.describe()}",
        )
        if len(data) != location.nbytes:
            raise TensorReadError(
                f"{location.name} of {self.files.describe()} is cut short: {len(data)} of its {location.nbytes} bytes "
                f"came ({location.file} ends early)"
            )
        return data

    def config(self) -> dict[str, Any]:
        """The model's config.json (an empty dict where there is none or it is not an object)."""
        if self._config is None:
            try:
                raw = self.files.read_file("config.json", max_bytes=MAX_CONFIG_BYTES)
                value = parse_json(raw, what="config.json").value
            except (OSError, UntrustedInputError):
                value = None
            self._config = value if isinstance(value, dict) else {}
        return self._config

    def tied(self) -> bool:
        """Whether config.json ties the output head to the input embedding (``tie_word_embeddings: true`` at
        the top level, else in the text model's part of a multimodal config). Where it says nothing the
        head is not taken to be the embedding: config classes disagree on the default (Llama's is false),
        and a head that is not the model's would make its own states look like another model's."""
        config = self.config()
        text = config.get("text_config")
        for part in (config, text if isinstance(text, dict) else {}):
            if "tie_word_embeddings" in part:
                return part["tie_word_embeddings"] is True
        return False

    def embedding(self) -> TensorLocation | None:
        return self.locate(EMBEDDING_NAMES, EMBEDDING_SUFFIX)

    def output_head(self) -> TensorLocation | None:
        """The lm_head, or the input embedding where no lm_head is stored and config.json ties them; None
        where there is neither."""
        head = self.locate(HEAD_NAMES)
        if head is None and self.tied():
            return self.embedding()
        return head

    def final_norm(self) -> TensorLocation | None:
        return self.locate(NORM_NAMES)
