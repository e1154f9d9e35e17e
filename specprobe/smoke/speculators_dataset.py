"""The loss mask of a speculators dump, read from the pipeline's own preprocessed dataset (Arrow, untrusted).

vllm-project/speculators (read at ``SPECULATORS_COMMIT``) keeps the loss mask out of its hidden-state files:

- ``scripts/prepare_data.py`` saves the preprocessed dataset with ``datasets``' ``save_to_disk(--output)``:
  ``data-<i>-of-<n>.arrow`` shards (Arrow IPC *stream* format, written by ``datasets``' ``ArrowWriter``),
  ``dataset_info.json`` and ``state.json`` (whose ``_data_files`` lists the shards in row order). Each row
  is ``input_ids`` (``list<int32>``: ``datasets`` stores a column of that name as int32 where the ids fit),
  ``loss_mask`` (``list<int64>``, 1 over the assistant tokens after each render boundary), ``seq_len``
  (int64) and, for multimodal targets, ``messages`` (``data_generation/preprocessing.py``).
- ``scripts/data_generation_offline.py`` loads that dataset and writes row ``i``'s hidden states to
  ``hs_<i>.safetensors`` in ``--output``, by default ``<dataset>/hidden_states``; the trainer
  (``train/data.py``, ``ArrowDataset``) reads ``hs_<i>`` beside row ``i`` of the dataset at
  ``<datapath>/hidden_states``, takes the row's ``loss_mask``, and skips a sample whose ``token_ids``
  differ from the row's ``input_ids``.

So sample ``hs_<i>`` is row ``i`` of the dataset one folder up (or the dump's own folder, when both were
written to one place), and its ``token_ids`` must equal the row's ``input_ids``. Nothing in the dataset
records how the responses were generated (``response_regeneration/script.py`` writes its
``sampling_params`` into the JSONL it produces, and ``prepare_data.py`` keeps only the columns above).

The shards are read with pyarrow's memory-mapped IPC readers, only the two columns needed, each record
batch validated in full before use; ``datasets`` is never imported and nothing in the folder runs. Sizes are
bounded: the state file, the shard count and sizes, rows, tokens per row, and the memory a read may
allocate (a memory-mapped read of what ``datasets`` writes allocates nothing: only compressed buffers do).
"""

from __future__ import annotations

import bisect
import os
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from specprobe.smoke.dumps import MAX_FILES, MAX_TOKENS, DumpError, DumpFolder, DumpFormat, _first_line, _index
from specprobe.untrusted.files import UntrustedInputError, load_json_file

SPECULATORS_COMMIT = "c05b95b303f7d4f21e8d7624e0ffa1c2d9b4d73b"

STATE_FILE = "state.json"
# state.json lists one entry per shard: a few hundred bytes each, far below this for any real dataset.
MAX_STATE_BYTES = 16 * 1024**2
MAX_SHARDS = 100_000
# datasets' shards default to 500 MB (max_shard_size); a shard above this is refused before it is mapped.
MAX_SHARD_BYTES = 64 * 1024**3
# A dataset row per sample file: the same bound as the files of one dump folder.
MAX_ROWS = MAX_FILES
MAX_BATCHES = 10_000_000
# Reading a memory-mapped uncompressed stream allocates nothing; decompressing one (which datasets never
# writes) allocates what the stream declares. Past this the dataset is refused.
MAX_ALLOCATED_BYTES = 2 * 1024**3
# The end-of-stream marker a closed Arrow stream writer appends (continuation token, zero length): a
# stream cut at a record batch boundary still parses, so its absence is what says the shard is truncated.
STREAM_END = b"\xff\xff\xff\xff\x00\x00\x00\x00"
FILE_MAGIC = b"ARROW1"
COLUMNS = ("input_ids", "loss_mask")


def find_dataset(dump: DumpFolder) -> Path | None:
    """The preprocessed dataset of a speculators dump, where speculators puts it: the folder above the one
    holding the ``hs_<i>.safetensors`` files (``<dataset>/hidden_states``, the default of both data
    generation and the trainer), or that folder itself (both written to one ``--output``)."""
    if not dump.files:
        return None
    folder = dump.files[0].parent
    for candidate in (folder.parent, folder):
        try:
            mode = (candidate / STATE_FILE).lstat().st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode):
            return candidate
    return None


@dataclass
class _Shard:
    name: str
    batches: list[Any] = field(default_factory=list)


@dataclass
class LossMaskDataset:
    """Rows of a speculators preprocessed dataset: ``input_ids`` and ``loss_mask`` of row i, on demand."""

    root: Path
    rows: int
    shards: list[_Shard]
    # Row index where each record batch starts, over all shards in order, and the batches themselves.
    starts: list[int]
    batches: list[Any]
    columns: dict[str, int]
    keep: list[Any] = field(default_factory=list, repr=False)  # the memory maps the batches point into

    def row(self, index: int, name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """Row ``index``'s (input_ids, loss_mask) as int64 tensors; DumpError when it is missing or malformed."""
        if not 0 <= index < self.rows:
            raise DumpError(
                "mismatch",
                f"{name} is sample {index}, and the speculators dataset {self.root} has {self.rows} rows: the "
                "dataset is not the one this dump was generated from",
                name,
            )
        at = bisect.bisect_right(self.starts, index) - 1
        batch, offset = self.batches[at], index - self.starts[at]
        ids = _list_value(batch.column(self.columns["input_ids"]), offset, "input_ids", index, name)
        mask = _list_value(batch.column(self.columns["loss_mask"]), offset, "loss_mask", index, name)
        if ids.shape[0] != mask.shape[0]:
            raise DumpError(
                "unreadable",
                f"{name}: row {index} of the speculators dataset has {ids.shape[0]} input_ids and "
                f"{mask.shape[0]} loss_mask entries",
                name,
            )
        return ids, mask


def _list_value(column: Any, offset: int, key: str, index: int, name: str) -> torch.Tensor:
    scalar = column[offset]
    if not scalar.is_valid:
        raise DumpError("unreadable", f"{name}: row {index} of the speculators dataset has no {key} (null)", name)
    values = scalar.values
    if len(values) > MAX_TOKENS:
        raise DumpError("unreadable", f"{name}: row {index}'s {key} has {len(values)} entries, over the "
                        f"{MAX_TOKENS} bound", name)
    if values.null_count:
        raise DumpError("unreadable", f"{name}: row {index}'s {key} holds nulls", name)
    # A copy: the memory-mapped buffer is read-only, and a sample is at most MAX_TOKENS entries.
    return torch.from_numpy(np.array(values.to_numpy(zero_copy_only=False), dtype=np.int64))


def _column_types(schema: Any, shard: str) -> dict[str, int]:
    """Field index of each needed column, refusing any that is not a list of integers (or booleans)."""
    import pyarrow as pa  # noqa: PLC0415 - pyarrow is imported only where a speculators dataset is read

    found: dict[str, int] = {}
    for key in COLUMNS:
        index = schema.get_field_index(key)
        if index < 0:
            names = ", ".join(schema.names[:8]) or "none"
            raise DumpError("unreadable", f"{shard} has no {key} column (columns: {names}): not a speculators "
                            "preprocessed dataset")
        kind = schema.field(index).type
        listed = pa.types.is_list(kind) or pa.types.is_large_list(kind)
        item = kind.value_type if listed else None
        ok = item is not None and (pa.types.is_integer(item) or (key == "loss_mask" and pa.types.is_boolean(item)))
        if not ok:
            raise DumpError("unreadable", f"{shard}: column {key} is {kind}, not a list of integers as speculators "
                            "writes it")
        found[key] = index
    return found


def _shard_names(root: Path) -> list[str]:
    """The shards of a ``save_to_disk`` folder in row order, from its state.json (plain names inside it)."""
    try:
        state = load_json_file(root / STATE_FILE, max_bytes=MAX_STATE_BYTES, what=f"{root / STATE_FILE}").value
    except (OSError, UntrustedInputError) as exc:
        raise DumpError("unreadable", f"the speculators dataset's {STATE_FILE} cannot be read: {_first_line(exc)}",
                        str(root / STATE_FILE)) from None
    files = state.get("_data_files") if isinstance(state, dict) else None
    if not isinstance(files, list) or not files:
        raise DumpError("unreadable", f"{root / STATE_FILE} lists no _data_files: not a dataset saved by datasets' "
                        "save_to_disk", str(root / STATE_FILE))
    if len(files) > MAX_SHARDS:
        raise DumpError("unreadable", f"{root / STATE_FILE} lists {len(files)} shards, over the {MAX_SHARDS} bound")
    names = []
    for entry in files:
        name = entry.get("filename") if isinstance(entry, dict) else None
        # A shard is a file of this folder: no path, no parent, nothing hidden behind a separator.
        if not isinstance(name, str) or not name or name in (".", "..") or "/" in name or "\\" in name \
                or "\0" in name:
            raise DumpError("unreadable", f"{root / STATE_FILE}: a _data_files entry is not a file name of the "
                            f"dataset folder ({str(name)[:80]!r})", str(root / STATE_FILE))
        names.append(name)
    return names


def _open_shard(path: Path, shard: _Shard, baseline: int, keep: list[Any]) -> dict[str, int]:
    """Map one shard and read its record batches (only the needed columns), each validated in full."""
    import pyarrow as pa  # noqa: PLC0415

    try:
        info = path.lstat()
    except OSError as exc:
        raise DumpError("unreadable", f"{shard.name} of the speculators dataset: {_first_line(exc)}") from None
    if not stat.S_ISREG(info.st_mode):
        raise DumpError("unreadable", f"{shard.name} of the speculators dataset is not a regular file")
    if info.st_size > MAX_SHARD_BYTES:
        raise DumpError("unreadable", f"{shard.name} is {info.st_size} bytes, over the {MAX_SHARD_BYTES}-byte bound")
    if info.st_size < len(STREAM_END):
        raise DumpError("unreadable", f"{shard.name} of the speculators dataset is empty or truncated "
                        f"({info.st_size} bytes)")
    mapped = pa.memory_map(os.fspath(path), "r")
    keep.append(mapped)
    head = mapped.read(len(FILE_MAGIC))
    mapped.seek(0)
    if head == FILE_MAGIC:
        columns = _column_types(pa.ipc.open_file(mapped).schema, shard.name)
        options = pa.ipc.IpcReadOptions(included_fields=sorted(columns.values()))
        file_reader = pa.ipc.open_file(mapped, options=options)
        if file_reader.num_record_batches > MAX_BATCHES:
            raise DumpError("unreadable", f"{shard.name} holds {file_reader.num_record_batches} record batches")
        batches = (file_reader.get_batch(i) for i in range(file_reader.num_record_batches))
        selected = file_reader.schema
    else:
        mapped.seek(info.st_size - len(STREAM_END))
        if mapped.read(len(STREAM_END)) != STREAM_END:
            raise DumpError("unreadable", f"{shard.name} of the speculators dataset does not end with Arrow's "
                            "end-of-stream marker: truncated")
        mapped.seek(0)
        columns = _column_types(pa.ipc.open_stream(mapped).schema, shard.name)
        mapped.seek(0)
        options = pa.ipc.IpcReadOptions(included_fields=sorted(columns.values()))
        stream_reader = pa.ipc.open_stream(mapped, options=options)
        batches = iter(stream_reader)
        selected = stream_reader.schema
    # Column indices within the batches read (the included fields only, in schema order).
    read_columns = {key: selected.get_field_index(key) for key in COLUMNS}
    for batch in batches:
        if len(shard.batches) >= MAX_BATCHES:
            raise DumpError("unreadable", f"{shard.name} holds more than {MAX_BATCHES} record batches")
        # The default pool, whose buffers outlive this reader (a pool of its own would be freed before them).
        if pa.default_memory_pool().bytes_allocated() - baseline > MAX_ALLOCATED_BYTES:
            raise DumpError("unreadable", f"{shard.name}: reading the speculators dataset would allocate more than "
                            f"{MAX_ALLOCATED_BYTES} bytes (compressed buffers, which datasets never writes)")
        batch.validate(full=True)
        shard.batches.append(batch)
    return read_columns


def open_dataset(root: Path) -> LossMaskDataset:
    """Open a speculators preprocessed dataset (``save_to_disk`` folder); DumpError (unreadable) says why not.

    ImportError when pyarrow is not installed (the caller says which extra to install)."""
    import pyarrow as pa  # noqa: PLC0415

    names = _shard_names(root)
    baseline = pa.default_memory_pool().bytes_allocated()
    keep: list[Any] = []
    shards: list[_Shard] = []
    starts: list[int] = []
    batches: list[Any] = []
    columns: dict[str, int] | None = None
    rows = 0
    for name in names:
        shard = _Shard(name)
        try:
            read_columns = _open_shard(root / name, shard, baseline, keep)
        except DumpError:
            raise
        # Whatever the bytes make pyarrow raise (its errors subclass these): one line, never a traceback.
        except (pa.ArrowException, OSError, ValueError, TypeError, OverflowError, MemoryError, IndexError,
                KeyError) as exc:
            raise DumpError("unreadable", f"{name} of the speculators dataset {root} cannot be read (truncated or not "
                            f"Arrow): {_first_line(exc)}", str(root / name)) from None
        if columns is not None and read_columns != columns:
            raise DumpError("unreadable", f"{name} of the speculators dataset has other columns than the first shard")
        columns = read_columns
        for batch in shard.batches:
            starts.append(rows)
            batches.append(batch)
            rows += batch.num_rows
            if rows > MAX_ROWS:
                raise DumpError("unreadable", f"the speculators dataset {root} has more than {MAX_ROWS} rows")
        shards.append(shard)
    assert columns is not None  # _shard_names returns at least one shard
    return LossMaskDataset(root, rows, shards, starts, batches, columns, keep)


def check_rows_cover(dataset: LossMaskDataset, dump: DumpFolder) -> None:
    """Every ``hs_<i>`` of the dump must have its row i: a dump longer than its dataset is another dataset's."""
    beyond = [path for path in dump.files if _index(path.name) >= dataset.rows]
    if beyond:
        name = dump.relative(beyond[0])
        raise DumpError(
            "mismatch",
            f"{len(beyond)} samples of the dump (first {name}) have no row in the speculators dataset "
            f"{dataset.root} ({dataset.rows} rows): the dataset is not the one this dump was generated from",
            name,
        )


PYARROW_MISSING = "pyarrow is not installed (pip install 'specprobe[smoke]')"


def attach_masks(dump: DumpFolder, explicit: Path | None) -> tuple[DumpFolder, str | None]:
    """The dump with its preprocessed dataset attached (``explicit``, else the one speculators lays out beside
    it), and, where none is attached, why: the note the no-mask warning carries. DumpError when the dataset
    cannot be read or is not this dump's; SpecprobeError for an explicit dataset that cannot apply."""
    from specprobe.findings import SpecprobeError  # noqa: PLC0415 - only this path raises it

    if explicit is not None:
        if dump.format is not DumpFormat.SPECULATORS:
            raise SpecprobeError(
                f"--loss-mask-dataset applies to speculators dumps (hs_<i>.safetensors); {dump.root} is a "
                f"{dump.format.value} dump, whose files carry their loss mask"
            )
        if not explicit.is_dir():
            raise SpecprobeError(f"--loss-mask-dataset {str(explicit)!r} is not a folder")
        root: Path | None = explicit
    elif dump.format is DumpFormat.SPECULATORS:
        root = find_dataset(dump)
    else:
        return dump, None
    if root is None:
        folder = dump.files[0].parent
        return dump, (
            f"no preprocessed dataset was found where speculators writes it ({STATE_FILE} in {folder.parent} or "
            f"{folder}); pass --loss-mask-dataset DIR"
        )
    try:
        dataset = open_dataset(root)
    except ImportError:
        if explicit is not None:
            raise SpecprobeError(f"--loss-mask-dataset needs pyarrow: {PYARROW_MISSING}") from None
        return dump, f"the speculators dataset {root} was not read: {PYARROW_MISSING}"
    check_rows_cover(dataset, dump)
    return replace(dump, masks=dataset), None
