"""Hidden-state dumps of drafter-training pipelines, read as untrusted input, one sample at a time.

Formats, as the pipelines' own code writes them:

- SpecForge offline data preparation (``scripts/prepare_hidden_states.py``): one ``torch.save`` dict per
  sample, ``rows_<a>-<b>/data_<i>.ckpt`` or, with ``--compress``, ``data_<i>.ckpt.gz`` (gzip of the same
  bytes). Keys ``input_ids`` [L], ``loss_mask`` [L], ``aux_hidden_state`` [1, L, n_aux * H] (the captured
  layers concatenated in capture order) and ``hidden_state`` [1, L, H] (the last layer). SpecForge
  captures through SGLang's ``set_eagle3_layers_to_capture(ids)``, which records the *output* of layer
  id (SGLang stores ``id + 1``); vLLM's aux id i is the *input* of layer i. No layer id is written into
  the files.
- vllm-project/speculators data generation (``scripts/data_generation_offline.py`` through vLLM's
  ``extract_hidden_states`` connector): ``hs_<i>.safetensors`` with ``token_ids`` [L] and
  ``hidden_states`` [L, n_layers, H], the layers of ``eagle_aux_hidden_state_layer_ids`` in vLLM's
  numbering, the last one the final layer by default (speculators' trainer splits ``[:, :-1]`` as aux
  and ``[:, -1]`` as the verifier's). The loss mask lives in the preprocessed dataset (``datasets``
  Arrow shards, row i for ``hs_<i>``), not in these files: ``speculators_dataset`` reads it; a
  ``loss_mask`` tensor in the file itself (a writer that adds one) is used first.
- SafeAILab EAGLE's ``ge_data``: ``data_<i>.ckpt`` with ``input_ids``, ``hidden_state`` (the last layer
  only) and ``loss_mask``. An EAGLE-3 drafter cannot be replayed from it: a finding, not a number.

Nothing from a dump runs: torch files load with ``weights_only=True`` (a pickle that would import code is
refused), sizes and counts are bounded before anything is allocated, and samples are read one by one.
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import random
import re
import stat
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors import SafetensorError, safe_open

if TYPE_CHECKING:
    from specprobe.smoke.speculators_dataset import LossMaskDataset

SPECFORGE_SOURCE = "https://github.com/sgl-project/SpecForge/blob/a6b6b0230009d15ec2a97a57384e6f53f0f96946/scripts/prepare_hidden_states.py"
SPECULATORS_SOURCE = (
    "https://github.com/vllm-project/speculators/blob/c05b95b303f7d4f21e8d7624e0ffa1c2d9b4d73b/src/speculators/train/data.py"
)
EAGLE_GE_DATA_SOURCE = "https://github.com/SafeAILab/EAGLE/blob/79d6f7900be89d8d8cabe2d14be929d9b3861a21/eagle/ge_data/ge_data_all_llama2chat.py"

# One sample of a long-context dump (a 128k-token sample of a 7168-wide target, three aux layers and the
# last in bfloat16) is about 7.5 GB; anything above this per file is refused before it is read.
MAX_SAMPLE_BYTES = 16 * 1024**3
# Tokens per sample and width per token: beyond any real model, far below what would overflow a size.
MAX_TOKENS = 1 << 20
MAX_WIDTH = 1 << 20
# Files listed from one dump folder (the seed's 10k-sample run had 10k): a bound on the walk itself.
MAX_FILES = 10_000_000
MAX_DEPTH = 4

_SPECFORGE_NAME = re.compile(r"^data_(\d+)\.ckpt(\.gz)?$")
_SPECULATORS_NAME = re.compile(r"^hs_(\d+)\.safetensors$")


class DumpFormat(StrEnum):
    SPECFORGE = "specforge"
    SPECULATORS = "speculators"
    EAGLE_GE_DATA = "eagle-ge-data"


class DumpError(Exception):
    """A dump (or one of its files) cannot be used; ``kind`` says which finding it becomes.

    kinds: ``unreadable`` (not a dump, empty, truncated, refused pickle, over the size bounds),
    ``last-layer-only`` (EAGLE ge_data), ``mismatch`` (another target's data), ``nonfinite``.
    """

    def __init__(self, kind: str, message: str, location: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.location = location


@dataclass(frozen=True)
class DumpExpectation:
    """What the drafter needs from each sample: the target's hidden size, its aux layer count, its vocabulary."""

    target_hidden_size: int
    num_aux: int
    target_vocab_size: int
    # False where the caller checks the states itself after copying them to a GPU (``check_finite`` there):
    # the check is then one pass over device memory instead of one over host pages on the reading thread.
    check_finite: bool = True


@dataclass
class DumpSample:
    """One sample: token ids [L], response mask [L] (bool) and the aux hidden states [L, n_aux * H]."""

    name: str
    input_ids: torch.Tensor
    loss_mask: torch.Tensor
    aux_hidden: torch.Tensor
    loss_mask_recorded: bool = True
    # Where the mask came from: the sample file itself, or the pipeline's preprocessed dataset.
    loss_mask_from_dataset: bool = False
    # The target's last layer [L, H] where the dump keeps it (SpecForge's hidden_state, after the final
    # norm; speculators' last slot, before it): what tells whose hidden states these are.
    last_hidden: torch.Tensor | None = None

    @property
    def length(self) -> int:
        return int(self.input_ids.shape[0])


@dataclass(frozen=True)
class DumpFolder:
    """A dump folder's sample files, in index order, and its detected format."""

    root: Path
    format: DumpFormat
    files: tuple[Path, ...]
    # speculators: the preprocessed dataset whose row i holds the loss mask of hs_<i>, where one was opened.
    masks: LossMaskDataset | None = field(default=None, compare=False)

    def relative(self, path: Path) -> str:
        return str(path.relative_to(self.root))


def _index(name: str) -> int:
    digits = re.findall(r"\d+", name)
    return int(digits[0]) if digits else -1


def list_dump(root: Path) -> DumpFolder:
    """Find the sample files below ``root`` (depth and count bounded, symlinks not followed) and the format.

    SpecForge and EAGLE's ge_data share a file name; which one a folder holds is told by the keys of
    its first sample (``detect_torch_format``), read here so that a ge_data dump is refused before any
    drafter is loaded.
    """
    if not root.is_dir():
        raise DumpError("unreadable", f"{root} is not a folder")
    torch_files: list[Path] = []
    safetensors_files: list[Path] = []
    seen = 0
    for folder, dirs, names in os.walk(root, followlinks=False):
        depth = len(Path(folder).relative_to(root).parts)
        if depth >= MAX_DEPTH:
            dirs.clear()
        dirs.sort()
        for name in sorted(names):
            seen += 1
            if seen > MAX_FILES:
                raise DumpError("unreadable", f"more than {MAX_FILES} files below {root}")
            path = Path(folder) / name
            try:
                mode = path.lstat().st_mode
            except OSError:
                continue
            if not stat.S_ISREG(mode):
                continue  # symlinks and special files are never opened
            if _SPECFORGE_NAME.match(name):
                torch_files.append(path)
            elif _SPECULATORS_NAME.match(name):
                safetensors_files.append(path)
    if torch_files and safetensors_files:
        raise DumpError(
            "unreadable",
            f"{root} mixes SpecForge/EAGLE data_<i>.ckpt files and speculators hs_<i>.safetensors files",
        )
    if safetensors_files:
        files = tuple(sorted(safetensors_files, key=lambda p: (_index(p.name), str(p))))
        return DumpFolder(root, DumpFormat.SPECULATORS, files)
    if not torch_files:
        raise DumpError(
            "unreadable",
            f"no hidden-state dump below {root}: expected SpecForge rows_*/data_<i>.ckpt[.gz] or speculators "
            "hs_<i>.safetensors files",
        )
    files = tuple(sorted(torch_files, key=lambda p: (_index(p.name), str(p))))
    first = files[0]
    return DumpFolder(root, detect_torch_format(load_torch_sample(first, root)), files)


def detect_torch_format(record: dict[str, Any]) -> DumpFormat:
    """SpecForge (``aux_hidden_state``) or EAGLE's ge_data (``hidden_state`` only) by the keys of one sample."""
    if "aux_hidden_state" in record:
        return DumpFormat.SPECFORGE
    if "hidden_state" in record and "input_ids" in record:
        return DumpFormat.EAGLE_GE_DATA
    keys = ", ".join(sorted(str(k) for k in record)[:8]) or "none"
    raise DumpError("unreadable", f"not a SpecForge or EAGLE sample (keys: {keys})")


def select_files(dump: DumpFolder, max_samples: int | None, seed: int) -> list[Path]:
    """All files, or a seeded random sample of ``max_samples`` of them in index order."""
    if max_samples is None or max_samples >= len(dump.files):
        return list(dump.files)
    chosen = random.Random(seed).sample(range(len(dump.files)), max_samples)
    return [dump.files[i] for i in sorted(chosen)]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _read_bounded(stream: Any, limit: int, name: str) -> bytes:
    """Read a (decompressing) stream whole, refusing it past ``limit`` bytes without holding more."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(1 << 22)
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > limit:
            raise DumpError("unreadable", f"{name} decompresses to more than {limit} bytes", name)
        chunks.append(chunk)


def _torch_load(path: Path, name: str, limit: int) -> Any:
    if path.name.endswith(".gz"):
        with gzip.open(path, "rb") as stream:
            data = _read_bounded(stream, limit, name)
        return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    try:
        # mmap: a sample's tensors are paged in as they are used, not copied up front.
        return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except RuntimeError as exc:
        if "mmap" not in str(exc):
            raise
    # torch.save's legacy (non-zip) format and plain pickles cannot be memory-mapped.
    with path.open("rb") as stream:
        return torch.load(stream, map_location="cpu", weights_only=True)


def load_torch_sample(path: Path, root: Path, *, limit: int = MAX_SAMPLE_BYTES) -> dict[str, Any]:
    """One ``torch.save`` dict (plain or gzip) with ``weights_only=True``: tensors and plain containers only."""
    name = str(path.relative_to(root))
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise DumpError("unreadable", f"{name}: {_first_line(exc)}", name) from None
    if size == 0:
        raise DumpError("unreadable", f"{name} is empty", name)
    if size > limit:
        raise DumpError("unreadable", f"{name} is {size} bytes, over the {limit}-byte bound per sample", name)
    try:
        with warnings.catch_warnings():
            # torch warns about pickle protocols other than its own; a refusal below says what matters.
            warnings.simplefilter("ignore", UserWarning)
            loaded = _torch_load(path, name, limit)
    except pickle.UnpicklingError as exc:
        # weights_only refuses every global that is not a tensor type: nothing was imported or called.
        detail = _first_line(exc).removeprefix("Weights only load failed. ")
        raise DumpError(
            "unreadable",
            f"{name} refused: its pickle asks for more than tensors ({detail[:160]}); nothing was run",
            name,
        ) from None
    except DumpError:
        raise
    except Exception as exc:  # any bytes reach torch's unpickler: struct, zip, gzip and EOF errors alike
        raise DumpError("unreadable", f"{name} cannot be read (truncated or not a torch file): {_first_line(exc)}",
                        name) from None
    if not isinstance(loaded, dict):
        raise DumpError("unreadable", f"{name} holds a {type(loaded).__name__}, not a sample dict", name)
    return loaded


def _tensor(record: dict[str, Any], key: str, name: str) -> torch.Tensor:
    value = record.get(key)
    if not isinstance(value, torch.Tensor):
        got = "missing" if value is None else type(value).__name__
        raise DumpError("unreadable", f"{name}: {key} is {got}, not a tensor", name)
    if any(d > MAX_TOKENS * MAX_WIDTH for d in value.shape) or value.dim() > 4:
        raise DumpError("unreadable", f"{name}: {key} has shape {tuple(value.shape)}", name)
    return value


def _squeeze_batch(value: torch.Tensor, dims: int, key: str, name: str) -> torch.Tensor:
    """SpecForge keeps a leading batch dimension of 1 on hidden states (``unsqueeze(0)``) but not on ids."""
    while value.dim() > dims and value.shape[0] == 1:
        value = value[0]
    if value.dim() != dims:
        raise DumpError("unreadable", f"{name}: {key} has shape {tuple(value.shape)}, expected {dims} dimensions",
                        name)
    return value


def _token_ids(value: torch.Tensor, key: str, name: str, vocab: int) -> torch.Tensor:
    ids = _squeeze_batch(value, 1, key, name)
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise DumpError("unreadable", f"{name}: {key} has dtype {ids.dtype}, not integers", name)
    if ids.shape[0] > MAX_TOKENS:
        raise DumpError("unreadable", f"{name}: {ids.shape[0]} tokens, over the {MAX_TOKENS} bound", name)
    ids = ids.to(torch.long)
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        raise DumpError(
            "mismatch",
            f"{name}: token ids reach {int(ids.max())} (min {int(ids.min())}), outside the drafter's target "
            f"vocabulary of {vocab}: the dump was made with another tokenizer or target",
            name,
        )
    return ids


def _check_width(width: int, expect: DumpExpectation, name: str, what: str) -> None:
    hidden, n_aux = expect.target_hidden_size, expect.num_aux
    if width % hidden != 0:
        raise DumpError(
            "mismatch",
            f"{name}: {what} are {width} wide, not a multiple of the drafter's target hidden size {hidden}: "
            "the dump comes from another target",
            name,
        )
    if width // hidden != n_aux:
        raise DumpError(
            "mismatch",
            f"{name}: {what} hold {width // hidden} layers of {hidden} where the drafter's fc takes {n_aux} "
            f"({n_aux * hidden} features): the dump captured another set of layers",
            name,
        )


def check_finite(aux: torch.Tensor, name: str) -> None:
    """Raise ``nonfinite`` naming the first token whose states hold a NaN or an infinity (any device)."""
    # In slices, so that a memory-mapped sample is never materialised twice.
    for start in range(0, aux.shape[0], 1024):
        chunk = aux[start : start + 1024]
        if not bool(torch.isfinite(chunk).all()):
            bad = int((~torch.isfinite(chunk)).any(dim=-1).nonzero()[0, 0]) + start
            raise DumpError("nonfinite", f"{name}: hidden states are NaN or infinite (first at token {bad})", name)


def _check_lengths(name: str, **lengths: int) -> None:
    if len(set(lengths.values())) > 1:
        said = ", ".join(f"{k} {v}" for k, v in lengths.items())
        raise DumpError("unreadable", f"{name}: lengths disagree ({said})", name)


def parse_specforge(record: dict[str, Any], name: str, expect: DumpExpectation) -> DumpSample:
    """A SpecForge record, checked against what the drafter takes."""
    if "aux_hidden_state" not in record:
        raise last_layer_only(name)
    ids = _token_ids(_tensor(record, "input_ids", name), "input_ids", name, expect.target_vocab_size)
    mask = _squeeze_batch(_tensor(record, "loss_mask", name), 1, "loss_mask", name)
    aux = _squeeze_batch(_tensor(record, "aux_hidden_state", name), 2, "aux_hidden_state", name)
    if not aux.dtype.is_floating_point:
        raise DumpError("unreadable", f"{name}: aux_hidden_state has dtype {aux.dtype}", name)
    _check_width(int(aux.shape[1]), expect, name, "aux_hidden_state rows")
    # SpecForge's dataloader pads input_ids and loss_mask to the batch; the captured states cover the
    # sample's own tokens. Padding carries no loss, so the common prefix is the sample.
    length = int(aux.shape[0])
    if ids.shape[0] < length or mask.shape[0] < length:
        _check_lengths(name, input_ids=int(ids.shape[0]), loss_mask=int(mask.shape[0]), aux_hidden_state=length)
    if bool(mask[length:].any()):
        raise DumpError("unreadable", f"{name}: loss_mask marks tokens past the captured hidden states", name)
    if expect.check_finite:
        check_finite(aux, name)
    last = record.get("hidden_state")
    last_hidden = None
    if isinstance(last, torch.Tensor) and last.dim() in (2, 3) and last.dtype.is_floating_point:
        last = _squeeze_batch(last, 2, "hidden_state", name)
        if last.shape == (length, expect.target_hidden_size):
            last_hidden = last
    return DumpSample(name, ids[:length], mask[:length] != 0, aux, last_hidden=last_hidden)


def parse_speculators(
    path: Path, name: str, expect: DumpExpectation, masks: LossMaskDataset | None = None
) -> DumpSample:
    """A speculators ``hs_<i>.safetensors``: token_ids [L], hidden_states [L, n_layers, H]; the loss mask from
    the file where it has one, else from row i of the preprocessed dataset (``masks``), whose ``input_ids``
    must be the file's ``token_ids`` (speculators' trainer skips a sample where they differ)."""
    try:
        size = path.stat().st_size
        if size > MAX_SAMPLE_BYTES:
            raise DumpError("unreadable", f"{name} is {size} bytes, over the per-sample bound", name)
        with safe_open(str(path), framework="pt", device="cpu") as handle:
            keys = set(handle.keys())
            for key in ("token_ids", "hidden_states"):
                if key not in keys:
                    raise DumpError("unreadable", f"{name}: no {key} tensor (keys: {', '.join(sorted(keys)[:8])})",
                                    name)
            ids_raw = handle.get_tensor("token_ids")
            hidden = handle.get_tensor("hidden_states")
            mask_raw = handle.get_tensor("loss_mask") if "loss_mask" in keys else None
    except DumpError:
        raise
    except (SafetensorError, OSError, RuntimeError, ValueError) as exc:
        raise DumpError("unreadable", f"{name} cannot be read (truncated or not safetensors): {_first_line(exc)}",
                        name) from None
    ids = _token_ids(ids_raw, "token_ids", name, expect.target_vocab_size)
    if hidden.dim() != 3 or not hidden.dtype.is_floating_point:
        raise DumpError("unreadable", f"{name}: hidden_states has shape {tuple(hidden.shape)} ({hidden.dtype}), "
                        "expected [tokens, layers, hidden]", name)
    tokens, layers, width = (int(d) for d in hidden.shape)
    if width != expect.target_hidden_size:
        raise DumpError("mismatch", f"{name}: hidden states are {width} wide where the drafter's target has "
                        f"{expect.target_hidden_size}: the dump comes from another target", name)
    last_hidden = None
    if layers == expect.num_aux + 1:
        last_hidden = hidden[:, -1]
        hidden = hidden[:, :-1]  # the last slot is the final layer (speculators' include_last_layer default)
    elif layers != expect.num_aux:
        raise DumpError("mismatch", f"{name}: {layers} captured layers where the drafter's fc takes {expect.num_aux} "
                        f"(or {expect.num_aux} and the final layer): the dump captured another set of layers", name)
    _check_lengths(name, token_ids=int(ids.shape[0]), hidden_states=tokens)
    aux = hidden.reshape(tokens, -1)
    if expect.check_finite:
        check_finite(aux, name)
    if mask_raw is not None:
        mask = _squeeze_batch(mask_raw, 1, "loss_mask", name)
        _check_lengths(name, token_ids=int(ids.shape[0]), loss_mask=int(mask.shape[0]))
        return DumpSample(name, ids, mask != 0, aux, last_hidden=last_hidden)
    if masks is not None:
        row_ids, row_mask = masks.row(_index(path.name), name)
        if row_ids.shape != ids.shape or not torch.equal(row_ids, ids):
            if row_ids.shape != ids.shape:
                differ = f"{ids.shape[0]} tokens against {row_ids.shape[0]}"
            else:
                differ = f"first at token {int((row_ids != ids).nonzero()[0, 0])}"
            raise DumpError(
                "mismatch",
                f"{name}: its token_ids and the input_ids of row {_index(path.name)} of the speculators dataset "
                f"{masks.root} differ ({differ}): the dataset is not the one this dump was generated from",
                name,
            )
        return DumpSample(name, ids, row_mask != 0, aux, last_hidden=last_hidden, loss_mask_from_dataset=True)
    # No mask in the file: every position after the first counts (see the finding the runner adds).
    mask = torch.ones(tokens, dtype=torch.bool)
    mask[:1] = False
    return DumpSample(name, ids, mask, aux, loss_mask_recorded=False, last_hidden=last_hidden)


def last_layer_only(name: str) -> DumpError:
    return DumpError(
        "last-layer-only",
        f"{name} is an EAGLE ge_data sample: it keeps only the target's last hidden state, and an EAGLE-3 "
        "drafter reads the concatenated aux layers, so it cannot be replayed from this data",
        name,
    )


def read_sample(dump: DumpFolder, path: Path, expect: DumpExpectation) -> DumpSample:
    """One sample of the dump, checked; raises DumpError."""
    name = dump.relative(path)
    if dump.format is DumpFormat.SPECULATORS:
        return parse_speculators(path, name, expect, dump.masks)
    if dump.format is DumpFormat.EAGLE_GE_DATA:
        raise last_layer_only(name)
    return parse_specforge(load_torch_sample(path, dump.root), name, expect)


def iter_samples(
    dump: DumpFolder, files: list[Path], expect: DumpExpectation, problems: list[DumpError]
) -> Iterator[DumpSample]:
    """Samples one at a time; a file that is unreadable or non-finite is recorded in ``problems`` and
    skipped, a sample of another target stops the iteration (raised): no figure comes from such data."""
    for path in files:
        try:
            yield read_sample(dump, path, expect)
        except DumpError as exc:
            if exc.kind in ("mismatch", "last-layer-only"):
                raise
            problems.append(exc)


def response_spans(mask: torch.Tensor) -> list[tuple[int, int]]:
    """(first, last) indices of each run of marked tokens; a run at token 0 starts at 1 (no context before it)."""
    marked = mask.to(torch.int8)
    if marked.numel() == 0:
        return []
    edges = torch.diff(torch.cat([torch.zeros(1, dtype=torch.int8), marked, torch.zeros(1, dtype=torch.int8)]))
    starts = (edges == 1).nonzero().flatten().tolist()
    ends = (edges == -1).nonzero().flatten().tolist()
    spans = []
    for start, end in zip(starts, ends, strict=True):
        first, last = max(1, int(start)), int(end) - 1
        if last >= first:
            spans.append((first, last))
    return spans


