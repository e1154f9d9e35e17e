"""A model on the Hugging Face hub, read where it lives: only what a verdict needs travels.

One request resolves the revision to a commit and lists the files (``/api/models/{repo}/revision/{rev}``);
then config.json and the shard index come whole, each safetensors header comes by HTTP Range (the 8-byte
length, then the header), and the d2t/t2d tensors the header locates come by Range too. A weight file
is never sent whole. Everything read is kept under specprobe's hub cache keyed by the commit, so a
re-run with ``HF_HUB_OFFLINE=1`` (or a CI job that restored the cache) gives the same verdict.

Requests go through huggingface_hub's own HTTP session, URL builder and header builder
(``get_session``, ``hf_hub_url``, ``build_hf_headers``: HF_ENDPOINT, HF_TOKEN or the stored token, the
user agent). ``hf_hub_download`` is not used: it retries a timed-out HEAD with a hard-coded 60 s timeout
and resumes a stalled GET five times (measured: 25 s for a 2 s timeout, minutes for an endpoint that never
answers), and it writes a file of any size; here every request has one bounded timeout, every answer a
byte bound, every repository a byte and request budget, and nothing is retried.

The token is sent only as huggingface_hub sends it (an ``authorization`` header); it never appears in a
message, a finding or a cache file name.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import struct
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote

from specprobe.hfconfig import MAX_CONFIG_BYTES, hub_cache_dir
from specprobe.modelfiles.base import ModelFiles, ModelUnavailableError, TensorReadError, Unavailable
from specprobe.modelfiles.local import LocalFiles
from specprobe.untrusted.files import UntrustedInputError, is_dir, open_regular, parse_json, read_bounded

# A hub id is "name" or "owner/name" of the characters the hub allows; a revision (branch, tag, commit,
# "refs/pr/1") follows an "@".
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?$")
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,199}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")

# What a verdict reads of one repository: config.json and a few other JSON files (kB), a shard index
# (~100 bytes per tensor), one header per shard (~100 bytes per tensor: a drafter's is a few kB) and
# d2t/t2d (draft vocab x 8 + target vocab x 1 bytes: under 1 MiB for a 256k vocabulary). 3 MiB per
# repository keeps a drafter and its target under 4 MiB together.
MAX_REPO_BYTES = 3 * 1024 * 1024
# Requests per repository: one listing, a few JSON files, two per shard header, two vocab ranges.
MAX_REPO_REQUESTS = 64
# Shards whose headers are read: drafters have one or two; a target's are never read.
MAX_SHARDS = 16
# The answer of the listing endpoint (a repository of 10,000 files lists in about 2 MB).
MAX_LISTING_BYTES = 2 * 1024 * 1024
# The first Range read of a header: most drafter headers fit, longer ones take one more request.
FIRST_HEADER_READ = 16 * 1024
# Small files read whole (config.json's own bound).
MAX_JSON_BYTES = MAX_CONFIG_BYTES
# Repositories fetched at the same time by one gate run.
MAX_CONCURRENT_REPOS = 8
# Network failures in a row after which a run stops asking the same endpoint (a hub that is down or
# hanging costs one timeout per worker, not one per repository).
MAX_NETWORK_FAILURES = 3
# What locating single tensors (``specprobe.checkpoint.tensors``: a target's embedding, final norm, lm_head)
# reads of one repository, apart from the budget above: its shard index whole (~100 bytes per tensor: 10-15
# MB for the largest public checkpoints) and the header of each shard that holds a wanted tensor (two
# Range requests each). The tensors' own bytes have a budget per read, which its caller sets.
MAX_LOCATE_BYTES = 32 * 1024 * 1024
MAX_LOCATE_REQUESTS = 48
# A tensor read may take 2 x the timeout plus its length at this rate (1 MiB/s: a 2.3 GB embedding may take
# 37 minutes); a stalled answer is cut by the per-request timeout long before.
MIN_TENSOR_RATE = 1024 * 1024
# Default seconds one request may wait for the hub (SPECPROBE_HUB_TIMEOUT overrides).
DEFAULT_TIMEOUT_S = 10.0
DEFAULT_ENDPOINT = "https://huggingface.co"

_TRUE = {"1", "ON", "YES", "TRUE"}
_VOCAB_TENSORS = ("d2t", "t2d")
_ROLES = ("draft", "target")

HUB_POLICIES = ("required", "optional", "off")


@dataclass(frozen=True)
class HubRef:
    """A hub repository as written: ``owner/name`` and an optional ``@revision``."""

    repo_id: str
    revision: str | None = None

    def __str__(self) -> str:
        return self.repo_id if self.revision is None else f"{self.repo_id}@{self.revision}"


def parse_hub_ref(spec: str, revision: str | None = None) -> HubRef | None:
    """``spec`` as a hub reference (``owner/name[@rev]``), or None when it is not one; ``revision`` (from
    a separate ``--revision``-style setting) applies when the spec names none."""
    repo_id, _, written = spec.partition("@")
    chosen = written or revision
    if not _HUB_ID.match(repo_id) or (chosen is not None and not _REVISION.match(chosen)):
        return None
    if chosen is not None and (".." in chosen or chosen.endswith("/")):
        return None
    return HubRef(repo_id, chosen or None)


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().upper() in _TRUE


def offline() -> bool:
    """HF_HUB_OFFLINE as huggingface_hub reads it, but now (the library fixes it when first imported)."""
    return _env_true("HF_HUB_OFFLINE")


def specprobe_hub_cache() -> Path:
    """Where specprobe keeps what it read of hub repositories: ``SPECPROBE_HUB_CACHE``, else
    ``specprobe-hub`` beside the Hugging Face hub cache (``$HF_HOME/specprobe-hub``), so that a CI job
    that caches HF_HOME keeps it too. Not inside the hub cache: ``hf cache`` would list it as damage."""
    if os.environ.get("SPECPROBE_HUB_CACHE"):
        return Path(os.environ["SPECPROBE_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "specprobe-hub"
    return hub_cache_dir().parent / "specprobe-hub"


def _timeout() -> float:
    try:
        value = float(os.environ.get("SPECPROBE_HUB_TIMEOUT", DEFAULT_TIMEOUT_S))
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if 0 < value <= 120 else DEFAULT_TIMEOUT_S


def _endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def _repo_folder(repo_id: str) -> str:
    return "models--" + repo_id.replace("/", "--")


def _hashed(name: str) -> str:
    # File names from the repository are untrusted: the cache stores them under a hash.
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:40]


def parse_listing(raw: bytes, what: str) -> tuple[str, dict[str, int | None]]:
    """The commit and top-level files (name -> size) of the hub's answer to
    ``/api/models/{repo}/revision/{rev}?blobs=true``; _HubError when the answer is unusable.
    The answer is untrusted input: bounded JSON, names that are not plain file names are skipped."""
    try:
        info = parse_json(raw, what="the hub's answer").value
    except UntrustedInputError as exc:
        raise _HubError(Unavailable.NOT_EXAMINED, f"{what}: {exc}") from None
    commit = info.get("sha") if isinstance(info, dict) else None
    siblings = info.get("siblings") if isinstance(info, dict) else None
    if not isinstance(commit, str) or not _COMMIT.match(commit) or not isinstance(siblings, list):
        raise _HubError(Unavailable.NOT_EXAMINED, f"the hub's answer for {what} has no commit and file list")
    files: dict[str, int | None] = {}
    for sibling in siblings:
        name = sibling.get("rfilename") if isinstance(sibling, dict) else None
        if not isinstance(name, str) or "/" in name or "\\" in name or name in ("", ".", "..") or "\0" in name:
            continue  # engines read a drafter's top level only
        size = sibling.get("size")
        lfs = sibling.get("lfs")
        if type(size) is not int and isinstance(lfs, dict):
            size = lfs.get("size")
        files[name] = size if type(size) is int and 0 <= size < 2**63 else None
    return commit, files


def vocab_spans(raw_header: bytes, data_start: int, file_size: int | None) -> list[tuple[int, int]]:
    """Where a safetensors header (untrusted bytes) places its d2t/t2d tensors: (file offset, length)
    pairs inside the file, at most one per name; nothing for a header that does not parse."""
    try:
        header = parse_json(raw_header, what="the header").value
    except UntrustedInputError:
        return []  # the checkpoint reader reports the header
    if not isinstance(header, dict):
        return []
    spans: list[tuple[int, int]] = []
    for name, entry in header.items():
        if name.rsplit(".", 1)[-1] not in _VOCAB_TENSORS or not isinstance(entry, dict):
            continue
        offsets = entry.get("data_offsets")
        if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(o) is int for o in offsets)):
            continue
        begin, end = data_start + offsets[0], data_start + offsets[1]
        if data_start <= begin < end and (file_size is None or end <= file_size):
            spans.append((begin, end - begin))
        if len(spans) == len(_VOCAB_TENSORS):
            break
    return spans


class _HubError(Exception):
    """One failed request, classified; the session turns it into ModelUnavailableError or an OSError."""

    def __init__(self, kind: Unavailable | None, reason: str, *, network: bool = False) -> None:
        super().__init__(reason)
        self.kind = kind  # None: a file missing from an existing commit
        self.reason = reason
        self.network = network


def _token_present() -> bool:
    # Whether a token will be sent (HF_TOKEN, or the token huggingface_hub stored); never its value.
    from huggingface_hub import get_token  # noqa: PLC0415

    try:
        return bool(get_token())
    except Exception:
        return False


def _classify(status: int, error_code: str | None, ref: HubRef) -> _HubError:
    """An HTTP error answer as huggingface_hub classes it (``hf_raise_for_status`` reads the same
    ``X-Error-Code`` header), in one sentence with advice."""
    rev = f" at revision {ref.revision!r}" if ref.revision else ""
    token = _token_present()
    auth = (
        "the token specprobe sent (HF_TOKEN, or the one `hf auth login` stored) has no access to it"
        if token
        else "no token was sent: set HF_TOKEN (or run `hf auth login`) with access to it"
    )
    if error_code == "GatedRepo":
        return _HubError(Unavailable.ACCESS, f"{ref.repo_id} is a gated repository and {auth}")
    if error_code == "RevisionNotFound":
        return _HubError(Unavailable.ACCESS, f"{ref.repo_id} has no revision {ref.revision or 'main'!r}")
    if error_code == "RepoNotFound" or status in (401, 403):
        return _HubError(
            Unavailable.ACCESS,
            f"{ref.repo_id}{rev} was not found on the hub, or it is private and {auth}",
        )
    if error_code == "EntryNotFound" or status == 404:
        return _HubError(None, f"not found in {ref.repo_id}{rev}")
    return _HubError(Unavailable.NOT_EXAMINED, f"the hub answered HTTP {status} for {ref.repo_id}")


@dataclass
class _Budget:
    bytes_left: int = MAX_REPO_BYTES
    requests_left: int = MAX_REPO_REQUESTS
    # How a refusal names this budget.
    what: str = f"{MAX_REPO_BYTES}-byte, {MAX_REPO_REQUESTS}-request budget specprobe spends on one hub repository"


class HubFiles(ModelFiles):
    """One hub repository at one commit. Built by ``HubSession.open``; reads come from memory, then from
    specprobe's hub cache, then (online) from the hub."""

    def __init__(self, session: HubSession, ref: HubRef, commit: str, files: dict[str, int | None]) -> None:
        self.session = session
        self.ref = ref
        self.label = ref.repo_id
        self.repo_id = ref.repo_id
        self.revision = ref.revision
        self.commit = commit
        self._commit = commit  # typed as a commit here: a HubFiles always has one
        self._files = files
        self._whole: dict[str, bytes] = {}
        self._ranges: dict[str, list[tuple[int, bytes]]] = {}
        self._budget = _Budget()
        self._locate_budget = _Budget(
            MAX_LOCATE_BYTES, MAX_LOCATE_REQUESTS,
            f"{MAX_LOCATE_BYTES}-byte, {MAX_LOCATE_REQUESTS}-request budget specprobe spends locating single "
            "tensors of one hub repository",
        )
        self._lock = threading.RLock()
        self.warmed: set[str] = set()
        self._sizes_learned = False

    # -- the interface ---------------------------------------------------------------------------------

    def listing(self) -> dict[str, int | None]:
        return dict(self._files)

    def read_file(self, name: str, *, max_bytes: int) -> bytes:
        return self._read_whole(name, max_bytes, self._budget)

    def read_range(self, name: str, begin: int, length: int) -> bytes:
        return self._read_span(name, begin, length, self._budget)

    def _read_whole(self, name: str, max_bytes: int, budget: _Budget) -> bytes:
        with self._lock:
            if name in self._whole:
                return self._whole[name]
            if name not in self._files:
                raise FileNotFoundError(f"{name} is not in {self.repo_id}")
            size = self._files[name]
            if size is not None and size > max_bytes:
                raise UntrustedInputError(f"{name} is {size} bytes, above the {max_bytes}-byte limit specprobe reads")
            path = self._cache_path("files", name)
            data = self._cached(path, max_bytes)
            if data is None:
                data = bytes(self._fetch_or_oserror(name, None, max_bytes, budget))
                self.session.cache_write(path, data)
                self._learn_size(name, len(data))
            self._whole[name] = data
            return data

    def _read_span(self, name: str, begin: int, length: int, budget: _Budget) -> bytes:
        with self._lock:
            if name in self._whole:
                return self._whole[name][begin : begin + length]
            for start, chunk in self._ranges.get(name, ()):
                if start <= begin and begin + length <= start + len(chunk):
                    return chunk[begin - start : begin - start + length]
            if name not in self._files:
                raise FileNotFoundError(f"{name} is not in {self.repo_id}")
            size = self._files[name]
            if size is not None:
                # As a read of a local file: nothing past the end, a short read at it (the reader says so).
                length = max(0, min(length, size - begin))
                if length == 0:
                    return b""
            path = self._cache_path("ranges", name, f"-{begin}-{length}")
            data = self._cached(path, length)
            if data is None:
                data = bytes(self._fetch_or_oserror(name, (begin, length), length, budget))
                # Kept under the span it turned out to be (shorter at the end of a file whose size the
                # listing did not give), which is the span a later run, knowing the size, asks for.
                self.session.cache_write(self._cache_path("ranges", name, f"-{begin}-{len(data)}"), data)
            self._ranges.setdefault(name, []).append((begin, data))
            return data

    # -- single tensors ----------------------------------------------------------------------------------

    def tensor_reads(self) -> ModelFiles:
        return _LocatingReads(self)

    def read_tensor_data(self, name: str, begin: int, length: int, *, max_bytes: int, key: str) -> bytearray:
        """One tensor's bytes by one Range request, streamed into memory and kept in specprobe's hub cache
        under the commit and a hash of ``name`` and ``key`` (the tensor's name), so that an offline re-run
        reads them from there; within ``max_bytes`` (the caller's budget, not the repository's)."""
        if length > max_bytes:
            raise TensorReadError(
                f"{key} of {self.describe()} is {length} bytes, above the {max_bytes}-byte limit of this read"
            )
        if length == 0:
            return bytearray()  # an empty tensor: no Range can ask for zero bytes
        with self._lock:
            path = self._cache_path("tensors", f"{name}\0{key}", f"-{begin}-{length}")
            kept = _read_exactly(path, length)
            if kept is not None:
                return kept
            if self.session.offline:
                raise TensorReadError(
                    f"HF_HUB_OFFLINE is set and {key} of {self.ref.repo_id}@{self._commit[:12]} is not in specprobe's "
                    f"hub cache ({self.session.cache_root}); run once with the hub reachable to fill it",
                    Unavailable.NOT_EXAMINED,
                )
            budget = _Budget(length, 1, f"{max_bytes}-byte limit of this tensor read")
            into = bytearray(length)
            try:
                received = self.session.fetch(
                    self.ref, self._commit, name, (begin, length), length, budget, self._files.get(name),
                    lambda total: self._learn_size(name, total), into=into,
                    deadline_s=2 * self.session.timeout_s + length / MIN_TENSOR_RATE,
                )
            except _HubError as exc:
                kind = exc.kind if exc.kind is not None else Unavailable.NOT_EXAMINED
                raise TensorReadError(f"{key} of {self.ref}: {exc.reason}", kind) from None
            if len(received) != length:
                return bytearray(received)  # the file ends early: the caller says the tensor is cut short
            self.session.cache_write(path, into)
            return into

    def _learn_size(self, name: str, total: int) -> None:
        # A hub whose listing gives no sizes still tells a file's size in each Range answer; the header
        # reader needs it (as a local file's size) to bound what it reads.
        if self._files.get(name) is None and 0 <= total < 2**63:
            self._files[name] = total
            self._sizes_learned = True

    def local_path(self, name: str) -> Path | None:
        path = self._cache_path("files", name)
        if name in self._whole and not path.is_file():
            self.session.cache_write(path, self._whole[name])
        return path if path.is_file() else None

    # -- reading ahead ---------------------------------------------------------------------------------

    def warm(self, role: str) -> None:
        """Read everything the verdict for ``role`` needs now, so that a failure is the model's (not
        examined) rather than a half-read checkpoint; ModelUnavailableError when the hub fails."""
        with self._lock:
            if role in self.warmed or (role == "target" and "draft" in self.warmed):
                return
            try:
                if "config.json" in self._files:
                    self._warm_file("config.json")
                if role == "draft":
                    self._warm_draft()
            except _HubError as exc:
                raise self.session.unavailable(self.ref, exc) from None
            if self._sizes_learned:
                # Kept with the listing, so that an offline run knows them too.
                self.session.remember(self.ref, self._commit, self._files)
                self._sizes_learned = False
            self.warmed.add(role)

    def _warm_file(self, name: str) -> bytes | None:
        try:
            return self.read_file(name, max_bytes=MAX_JSON_BYTES)
        except UntrustedInputError:
            return None  # the checkpoint reader says so, as for a local file
        except _HubOSError as exc:
            raise exc.error from None

    def _warm_draft(self) -> None:
        for name in sorted(self._files):
            if name.endswith(".safetensors.index.json"):
                self._warm_file(name)
        shards = sorted(name for name in self._files if name.endswith(".safetensors"))
        if len(shards) > MAX_SHARDS:
            raise _HubError(
                Unavailable.NOT_EXAMINED,
                f"{self.repo_id} has {len(shards)} safetensors files; specprobe reads the headers of at most "
                f"{MAX_SHARDS} (a drafter has one or two)",
            )
        for shard in shards:
            self._warm_header(shard)

    def _warm_header(self, shard: str) -> None:
        size = self._files.get(shard)
        first = FIRST_HEADER_READ if size is None else min(FIRST_HEADER_READ, size)
        if first < 8:
            return  # too short to hold a header: the checkpoint reader reports it
        try:
            head = self.read_range(shard, 0, first)
        except _HubOSError as exc:
            raise exc.error from None
        if len(head) < 8:
            return
        (length,) = struct.unpack("<Q", head[:8])
        if size is not None and length > size - 8:
            return  # the reader reports the impossible length from these 8 bytes
        if 8 + length > first:
            if length > self._budget.bytes_left:
                raise _HubError(
                    Unavailable.NOT_EXAMINED,
                    f"{shard} of {self.repo_id} declares a {length}-byte header, above the "
                    f"{MAX_REPO_BYTES}-byte budget specprobe reads of one hub repository",
                )
            try:
                rest = self.read_range(shard, first, 8 + length - first)
            except _HubOSError as exc:
                raise exc.error from None
            raw = head[8:] + rest
        else:
            raw = head[8 : 8 + length]
        self._warm_vocab(shard, raw, 8 + length)

    def _warm_vocab(self, shard: str, raw: bytes, data_start: int) -> None:
        """Read d2t/t2d where the header puts them (the vocabulary rules read their values)."""
        for begin, length in vocab_spans(raw, data_start, self._files.get(shard)):
            if length <= self._budget.bytes_left:
                try:
                    self.read_range(shard, begin, length)
                except _HubOSError as exc:
                    raise exc.error from None

    # -- cache and network -----------------------------------------------------------------------------

    def _cache_path(self, kind: str, name: str, suffix: str = "") -> Path:
        return self.session.commit_dir(self.ref.repo_id, self._commit) / kind / (_hashed(name) + suffix)

    def _cached(self, path: Path, max_bytes: int) -> bytes | None:
        try:
            return read_bounded(path, max_bytes=max_bytes, what=path.name)
        except (OSError, UntrustedInputError):
            return None

    def _fetch_or_oserror(
        self, name: str, span: tuple[int, int] | None, max_bytes: int, budget: _Budget
    ) -> bytes | bytearray:
        if self.session.offline:
            raise _HubOSError(
                _HubError(
                    Unavailable.NOT_EXAMINED,
                    f"HF_HUB_OFFLINE is set and {name} of {self.ref.repo_id}@{self._commit[:12]} is not in specprobe's "
                    f"hub cache ({self.session.cache_root}); run once with the hub reachable to fill it",
                    network=True,
                )
            )
        try:
            return self.session.fetch(
                self.ref, self._commit, name, span, max_bytes, budget, self._files.get(name),
                lambda total: self._learn_size(name, total),
            )
        except _HubError as exc:
            raise _HubOSError(exc) from None


def _read_exactly(path: Path, length: int) -> bytearray | None:
    """The whole of a cached file of exactly ``length`` bytes, read into memory once; None otherwise."""
    try:
        with open_regular(path) as handle:
            if os.fstat(handle.fileno()).st_size != length:
                return None
            data = bytearray(length)
            if cast("io.BufferedReader", handle).readinto(data) != length:
                return None
            return data
    except OSError:
        return None


class _LocatingReads(ModelFiles):
    """A hub repository's small reads (shard index, shard headers) made to locate single tensors: the same
    files and caches, charged to their own budget (``MAX_LOCATE_BYTES``) rather than to the 3 MiB one of
    the checks, so that a target's 10 MB shard index can be read where a tensor is wanted."""

    def __init__(self, files: HubFiles) -> None:
        self._of = files
        self.label = files.label
        self.commit = files.commit
        self.repo_id = files.repo_id
        self.revision = files.revision

    def listing(self) -> dict[str, int | None]:
        return self._of.listing()

    def read_file(self, name: str, *, max_bytes: int) -> bytes:
        return self._remembering(lambda: self._of._read_whole(name, max_bytes, self._of._locate_budget))

    def read_range(self, name: str, begin: int, length: int) -> bytes:
        return self._remembering(lambda: self._of._read_span(name, begin, length, self._of._locate_budget))

    def _remembering(self, read: Callable[[], bytes]) -> bytes:
        data = read()
        with self._of._lock:
            if self._of._sizes_learned:
                # A size the listing lacked and a Range answer told: kept with the listing for offline runs.
                self._of.session.remember(self._of.ref, self._of._commit, self._of._files)
                self._of._sizes_learned = False
        return data

    def read_tensor_data(self, name: str, begin: int, length: int, *, max_bytes: int, key: str) -> bytearray:
        return self._of.read_tensor_data(name, begin, length, max_bytes=max_bytes, key=key)


class _HubOSError(OSError):
    """A read that failed on the hub, as the OSError the checkpoint reader expects of a file."""

    def __init__(self, error: _HubError) -> None:
        super().__init__(error.reason)
        self.error = error
        self.strerror = error.reason


@dataclass
class HubSession:
    """What one run reads from the hub: each repository resolved and fetched once, at most
    ``MAX_CONCURRENT_REPOS`` at a time, under one policy.

    ``policy``: ``optional`` (default) fetches what it can and reports what it cannot; ``required``
    makes a model that cannot be read a failure; ``off`` never asks the hub (the local caches only).
    """

    policy: str = "optional"
    offline: bool = field(default_factory=offline)
    endpoint: str = field(default_factory=_endpoint)
    timeout_s: float = field(default_factory=_timeout)
    cache_root: Path = field(default_factory=specprobe_hub_cache)
    requests: int = 0
    bytes_received: int = 0
    _opened: dict[tuple[str, str | None], HubFiles | ModelUnavailableError] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _repo_locks: dict[tuple[str, str | None], threading.Lock] = field(default_factory=dict)
    _network_failures: int = 0
    _last_network_reason: str | None = None

    # -- opening ---------------------------------------------------------------------------------------

    def open(self, ref: HubRef, role: str) -> ModelFiles:
        """The files of ``ref`` for ``role`` (draft: config, index, headers, d2t/t2d; target: config),
        read once per run; ModelUnavailableError (one sentence with advice) when they cannot be."""
        assert role in _ROLES
        key = (ref.repo_id, ref.revision)
        with self._lock:
            repo_lock = self._repo_locks.setdefault(key, threading.Lock())
        with repo_lock:
            known = self._opened.get(key)
            if isinstance(known, ModelUnavailableError):
                raise known
            if known is None:
                try:
                    opened = self._resolve(ref)
                except ModelUnavailableError as exc:
                    self._opened[key] = exc
                    raise
                if not isinstance(opened, HubFiles):
                    return opened  # a complete local snapshot: read in place
                self._opened[key] = known = opened
            try:
                known.warm(role)
            except ModelUnavailableError as exc:
                self._opened[key] = exc
                raise
            return known

    def prefetch(self, wanted: Iterable[tuple[HubRef, str]]) -> None:
        """Open every distinct (repository, role) in parallel, at most ``MAX_CONCURRENT_REPOS`` at a time;
        failures are kept and raised again by ``open``."""
        distinct = list(dict.fromkeys(wanted))
        if len(distinct) < 2:
            return
        # Imported here: only a run naming several hub repositories starts threads (~4 ms of import).
        import concurrent.futures  # noqa: PLC0415

        with concurrent.futures.ThreadPoolExecutor(max_workers=MAX_CONCURRENT_REPOS) as pool:
            for future in [pool.submit(self._try_open, ref, role) for ref, role in distinct]:
                future.result()

    def _try_open(self, ref: HubRef, role: str) -> None:
        with contextlib.suppress(ModelUnavailableError):
            self.open(ref, role)

    def _resolve(self, ref: HubRef) -> ModelFiles:
        if self.policy == "off" or self.offline:
            found = self._from_caches(ref)
            if found is not None:
                return found
            if self.policy == "off":
                raise ModelUnavailableError(
                    str(ref),
                    Unavailable.OFF,
                    f"{ref} is a hub id and the hub is switched off (hub = \"off\"); it is not in the local caches",
                )
            # HF_HUB_OFFLINE is the user's own choice not to ask the hub, as hub = "off" is.
            raise ModelUnavailableError(
                str(ref),
                Unavailable.OFF,
                f"HF_HUB_OFFLINE is set and {ref} is not in specprobe's hub cache ({self.cache_root}) nor in the "
                "Hugging Face cache; run once with the hub reachable",
            )
        try:
            commit, files = self._listing(ref)
        except _HubError as exc:
            if exc.network:
                found = self._from_caches(ref)
                if found is not None:
                    return found
            raise self.unavailable(ref, exc) from None
        snapshot = self._hf_snapshot(ref.repo_id, commit)
        wanted = [n for n in files if n == "config.json" or n.endswith((".safetensors", ".safetensors.index.json"))]
        if snapshot is not None and wanted and all((snapshot / n).is_file() for n in wanted):
            # Every file the verdict reads is already downloaded at this commit: nothing more travels.
            return LocalFiles(snapshot, label=ref.repo_id, commit=commit, repo_id=ref.repo_id, revision=ref.revision)
        return HubFiles(self, ref, commit, files)

    def _listing(self, ref: HubRef) -> tuple[str, dict[str, int | None]]:
        revision = ref.revision or "main"
        url = f"{self.endpoint}/api/models/{ref.repo_id}/revision/{quote(revision, safe='')}?blobs=true"
        raw = self._get(ref, url, None, MAX_LISTING_BYTES, None)
        commit, files = parse_listing(bytes(raw), str(ref))
        self.remember(ref, commit, files)
        return commit, files

    # -- the caches ------------------------------------------------------------------------------------

    def commit_dir(self, repo_id: str, commit: str) -> Path:
        return self.cache_root / _repo_folder(repo_id) / "commits" / commit

    def _ref_path(self, ref: HubRef) -> Path:
        return self.cache_root / _repo_folder(ref.repo_id) / "refs" / quote(ref.revision or "main", safe="")

    def remember(self, ref: HubRef, commit: str, files: dict[str, int | None]) -> None:
        self.cache_write(self.commit_dir(ref.repo_id, commit) / "listing.json", json.dumps({"files": files}).encode())
        self.cache_write(self._ref_path(ref), commit.encode())

    def cache_write(self, path: Path, data: bytes | bytearray) -> None:
        """Keep ``data`` at ``path`` (written whole, then renamed); a cache that cannot be written only
        costs the next run its requests."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
            partial.write_bytes(data)
            partial.replace(path)
        except OSError:
            return

    def _from_caches(self, ref: HubRef) -> ModelFiles | None:
        """``ref`` as an earlier run kept it (specprobe's hub cache), else as ``hf download`` left it."""
        snapshot = self._hf_snapshot(ref.repo_id, ref.revision or "main")
        if snapshot is not None and any(p.name.endswith(".safetensors") for p in snapshot.iterdir()):
            # Downloaded with its weights (`hf download`): every reader, fix and --deep included, can use it.
            return LocalFiles(
                snapshot, label=ref.repo_id, commit=snapshot.name, repo_id=ref.repo_id, revision=ref.revision
            )
        commit: str | None = ref.revision if ref.revision and _COMMIT.match(ref.revision) else None
        if commit is None:
            try:
                commit = read_bounded(self._ref_path(ref), max_bytes=64, what="ref").decode().strip()
            except (OSError, UntrustedInputError, UnicodeDecodeError):
                commit = None
        if commit is not None and _COMMIT.match(commit):
            listing = self.commit_dir(ref.repo_id, commit) / "listing.json"
            try:
                files = parse_json(read_bounded(listing, max_bytes=MAX_LISTING_BYTES, what="listing"), what="listing")
                kept = files.value.get("files") if isinstance(files.value, dict) else None
            except (OSError, UntrustedInputError):
                kept = None
            if isinstance(kept, dict):
                sizes = {str(k): (v if type(v) is int else None) for k, v in kept.items()}
                return HubFiles(self, ref, commit, sizes)
        snapshot = self._hf_snapshot(ref.repo_id, commit or ref.revision or "main")
        if snapshot is not None:
            return LocalFiles(
                snapshot, label=ref.repo_id, commit=snapshot.name, repo_id=ref.repo_id, revision=ref.revision
            )
        return None

    def _hf_snapshot(self, repo_id: str, revision: str) -> Path | None:
        """The Hugging Face cache's snapshot folder of ``repo_id`` at ``revision`` (a commit or a ref)."""
        repo = hub_cache_dir() / _repo_folder(repo_id)
        commit = revision if _COMMIT.match(revision) else None
        if commit is None:
            try:
                commit = read_bounded(repo / "refs" / revision, max_bytes=64, what="ref").decode().strip()
            except (OSError, UntrustedInputError, UnicodeDecodeError, ValueError):
                return None
        if not _COMMIT.match(commit):
            return None
        snapshot = repo / "snapshots" / commit
        return snapshot if is_dir(snapshot) and (snapshot / "config.json").is_file() else None

    # -- requests --------------------------------------------------------------------------------------

    def unavailable(self, ref: HubRef, error: _HubError) -> ModelUnavailableError:
        kind = error.kind if error.kind is not None else Unavailable.NOT_EXAMINED
        return ModelUnavailableError(str(ref), kind, error.reason)

    def fetch(  # noqa: PLR0917 - one request's coordinates, all needed
        self,
        ref: HubRef,
        commit: str,
        name: str,
        span: tuple[int, int] | None,
        max_bytes: int,
        budget: _Budget,
        size: int | None = None,
        on_size: Callable[[int], None] | None = None,
        *,
        into: bytearray | None = None,
        deadline_s: float | None = None,
    ) -> bytes | bytearray:
        """``name`` at ``commit`` (whole, or the byte span ``(begin, length)``), within ``budget``; with
        ``into``, the span is streamed into it (and it, or its received part, returned)."""
        from huggingface_hub import hf_hub_url  # noqa: PLC0415

        # A whole file is asked with its listed size (or its bound when the hub gave none).
        wanted = span[1] if span is not None else min(max_bytes, size if size is not None else 0)
        if budget.requests_left <= 0 or wanted > budget.bytes_left:
            raise _HubError(
                Unavailable.NOT_EXAMINED, f"reading {name} would exceed the {budget.what} ({ref.repo_id})"
            )
        budget.requests_left -= 1
        url = hf_hub_url(ref.repo_id, name, revision=commit, endpoint=self.endpoint)
        try:
            data = self._get(
                ref, url, span, min(max_bytes, budget.bytes_left), name, on_size=on_size, into=into,
                deadline_s=deadline_s,
            )
        except _HubError as exc:
            if exc.kind is None:
                raise _HubError(Unavailable.NOT_EXAMINED, f"{name} is listed but {exc.reason}") from None
            raise
        budget.bytes_left -= len(data)
        return data

    def _get(
        self,
        ref: HubRef,
        url: str,
        span: tuple[int, int] | None,
        max_bytes: int,
        name: str | None,
        *,
        on_size: Callable[[int], None] | None = None,
        into: bytearray | None = None,
        deadline_s: float | None = None,
    ) -> bytes | bytearray:
        """One GET through huggingface_hub's session: one timeout, no retry, at most ``max_bytes`` read
        (into ``into`` when given: a tensor is not held twice), within ``deadline_s`` (2 x the timeout)."""
        with self._lock:
            if self._network_failures >= MAX_NETWORK_FAILURES:
                raise _HubError(
                    Unavailable.NOT_EXAMINED,
                    f"{ref} was not asked: the hub at {self.endpoint} failed {self._network_failures} times in a row "
                    f"in this run ({self._last_network_reason})",
                    network=True,
                )
        import httpx2  # noqa: PLC0415  (huggingface_hub's own HTTP client)
        from huggingface_hub import get_session  # noqa: PLC0415
        from huggingface_hub.utils import build_hf_headers  # type: ignore[attr-defined]  # noqa: PLC0415

        headers = build_hf_headers(library_name="specprobe", headers={"Accept-Encoding": "identity"})
        if span is not None:
            headers["Range"] = f"bytes={span[0]}-{span[0] + span[1] - 1}"
        allowed = deadline_s if deadline_s is not None else 2 * self.timeout_s
        deadline = time.monotonic() + allowed
        what = name or "the file list"
        try:
            with get_session().stream(
                "GET", url, headers=headers, timeout=httpx2.Timeout(self.timeout_s, connect=min(5.0, self.timeout_s))
            ) as response:
                with self._lock:
                    self.requests += 1
                if response.status_code >= 400:
                    raise _classify(response.status_code, response.headers.get("X-Error-Code"), ref)
                total = None
                if span is not None:
                    total = _check_range(response, span, ref, what)
                    if total is not None and on_size is not None:
                        on_size(total)
                    max_bytes = min(max_bytes, span[1])
                declared = response.headers.get("Content-Length")
                if span is None and declared is not None and declared.isdigit() and int(declared) > max_bytes:
                    raise _HubError(
                        Unavailable.NOT_EXAMINED,
                        f"{what} of {ref.repo_id} is {declared} bytes, above the {max_bytes}-byte limit "
                        "specprobe reads",
                    )
                chunks: list[bytes] = []
                received = 0
                for chunk in response.iter_bytes():
                    if into is not None:
                        piece = chunk[: len(into) - received]
                        into[received : received + len(piece)] = piece
                        received += len(piece)
                    else:
                        chunks.append(chunk)
                        received += len(chunk)
                    if received >= max_bytes or time.monotonic() > deadline:
                        break
                with self._lock:
                    self.bytes_received += received
                if time.monotonic() > deadline:
                    raise _HubError(
                        Unavailable.NOT_EXAMINED,
                        f"the hub at {self.endpoint} sent {what} of {ref.repo_id} too slowly "
                        f"(more than {allowed:g} s)",
                        network=True,
                    )
                data: bytes | bytearray
                if into is not None:
                    data = into if received == len(into) else bytes(into[:received])
                else:
                    data = b"".join(chunks)
                if span is None and received >= max_bytes and declared is None:
                    raise _HubError(
                        Unavailable.NOT_EXAMINED,
                        f"{what} of {ref.repo_id} is larger than the {max_bytes}-byte limit specprobe reads",
                    )
                if len(data) > max_bytes:
                    data = data[:max_bytes]
                at_end = span is not None and total is not None and span[0] + len(data) == total
                if span is not None and len(data) != span[1] and not at_end:
                    raise _HubError(
                        Unavailable.NOT_EXAMINED, f"the hub sent {len(data)} of the {span[1]} bytes asked of {what}"
                    )
        except _HubError as exc:
            self._note(exc)
            raise
        except httpx2.TimeoutException:
            error = _HubError(
                Unavailable.NOT_EXAMINED,
                f"the hub at {self.endpoint} did not answer within {self.timeout_s:g} s for {ref}; not retried "
                "(SPECPROBE_HUB_TIMEOUT sets the wait)",
                network=True,
            )
            self._note(error)
            raise error from None
        except (httpx2.HTTPError, OSError) as exc:
            error = _HubError(
                Unavailable.NOT_EXAMINED,
                f"the hub at {self.endpoint} could not be reached for {ref} ({_short_reason(exc)}); check the network "
                "or HF_ENDPOINT, or set HF_HUB_OFFLINE=1 to use what earlier runs cached",
                network=True,
            )
            self._note(error)
            raise error from None
        with self._lock:
            self._network_failures = 0
        return data

    def _note(self, error: _HubError) -> None:
        with self._lock:
            if error.network:
                self._network_failures += 1
                self._last_network_reason = error.reason
            else:
                self._network_failures = 0


def _check_range(response: Any, span: tuple[int, int], ref: HubRef, what: str) -> int | None:
    """A Range answer must be 206 at the offset asked (or a 200 from byte 0, of which only the span is
    read); a server that ignores Range would otherwise stream a whole weight file. Returns the file's
    size where the answer tells it (``Content-Range: bytes A-B/SIZE``)."""
    begin, _ = span
    if response.status_code == 206:
        content_range = response.headers.get("Content-Range", "")
        match = re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", content_range)
        if match is None or int(match.group(1)) != begin:
            raise _HubError(
                Unavailable.NOT_EXAMINED,
                f"the hub answered a Range read of {what} with Content-Range {content_range!r}",
            )
        total = match.group(3)
        return int(total) if total.isdigit() and len(total) < 20 else None
    if response.status_code == 200 and begin == 0:
        length = response.headers.get("Content-Length", "")
        return int(length) if length.isdigit() and len(length) < 20 else None
    raise _HubError(
        Unavailable.NOT_EXAMINED,
        f"the hub at the endpoint ignores Range requests (HTTP {response.status_code} for {what} of {ref.repo_id}); "
        "specprobe does not download weight files",
    )


def _short_reason(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    text = re.sub(r"\s+", " ", text)[:120]
    return text or "connection failed"
