"""Files family: config.json, safetensors headers and shard index, pickle-only weights.

The checkpoint reader records every defect as a FileIssue; this module maps each kind to its rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specprobe.findings import Finding, Severity
from specprobe.rules import Rule, rule

if TYPE_CHECKING:
    from specprobe.context import CheckContext

FAMILY = "files"
SAFETENSORS_FORMAT = "https://github.com/huggingface/safetensors/blob/v0.6.2/README.md#format"
HF_PICKLE = "https://huggingface.co/docs/hub/security-pickle"
SHARD_INDEX = "https://huggingface.co/docs/transformers/v4.57.0/en/big_models#sharded-checkpoints"

CONFIG_MISSING = rule(
    "FILES-CONFIG-MISSING",
    FAMILY,
    Severity.ERROR,
    "config.json is missing from the drafter folder",
    "https://huggingface.co/docs/transformers/v4.57.0/en/main_classes/configuration",
)
CONFIG_INVALID = rule(
    "FILES-CONFIG-INVALID",
    FAMILY,
    Severity.ERROR,
    "config.json is not a valid JSON object",
    "https://huggingface.co/docs/transformers/v4.57.0/en/main_classes/configuration",
)
NO_WEIGHTS = rule(
    "FILES-NO-WEIGHTS",
    FAMILY,
    Severity.ERROR,
    "no safetensors weights in the folder",
    SAFETENSORS_FORMAT,
)
PICKLE_ONLY = rule(
    "FILES-PICKLE-ONLY",
    FAMILY,
    Severity.ERROR,
    "weights only as pickle (.bin/.pt): reported, never unpickled",
    HF_PICKLE,
)
PICKLE_IGNORED = rule(
    "FILES-PICKLE-IGNORED",
    FAMILY,
    Severity.INFO,
    "pickle files beside the safetensors weights are not read",
    HF_PICKLE,
)
HEADER_INVALID = rule(
    "FILES-HEADER-INVALID",
    FAMILY,
    Severity.ERROR,
    "safetensors header unreadable: length beyond the file, not JSON, or malformed entries",
    SAFETENSORS_FORMAT,
)
TRUNCATED = rule(
    "FILES-TRUNCATED",
    FAMILY,
    Severity.ERROR,
    "a safetensors file ends before its tensors' data",
    SAFETENSORS_FORMAT,
)
DTYPE_UNKNOWN = rule(
    "FILES-DTYPE-UNKNOWN",
    FAMILY,
    Severity.ERROR,
    "a tensor has a dtype safetensors does not define",
    SAFETENSORS_FORMAT,
)
TENSOR_SIZE = rule(
    "FILES-TENSOR-SIZE",
    FAMILY,
    Severity.ERROR,
    "shape x dtype size differs from the tensor's byte span",
    SAFETENSORS_FORMAT,
)
OFFSETS_OVERLAP = rule(
    "FILES-OFFSETS-OVERLAP",
    FAMILY,
    Severity.ERROR,
    "two tensors' data_offsets overlap",
    SAFETENSORS_FORMAT,
)
OFFSETS_GAP = rule(
    "FILES-OFFSETS-GAP",
    FAMILY,
    Severity.ERROR,
    "tensor data must tile the data region: no gaps, no trailing bytes (the safetensors loader refuses the file)",
    "https://github.com/huggingface/safetensors/blob/v0.6.2/safetensors/src/tensor.rs",
)
INDEX_INVALID = rule(
    "FILES-INDEX-INVALID",
    FAMILY,
    Severity.ERROR,
    "model.safetensors.index.json is not a valid shard index",
    SHARD_INDEX,
)
SHARD_MISSING = rule(
    "FILES-SHARD-MISSING",
    FAMILY,
    Severity.ERROR,
    "a shard named in the index is missing",
    SHARD_INDEX,
)
INDEX_TENSOR_MISSING = rule(
    "FILES-INDEX-TENSOR-MISSING",
    FAMILY,
    Severity.ERROR,
    "the index places a tensor in a shard that lacks it",
    SHARD_INDEX,
)
INDEX_UNLISTED = rule(
    "FILES-INDEX-UNLISTED", FAMILY, Severity.WARNING, "a shard holds a tensor the index does not list", SHARD_INDEX
)
TENSOR_DUPLICATE = rule(
    "FILES-TENSOR-DUPLICATE",
    FAMILY,
    Severity.ERROR,
    "the same tensor name is stored in two files",
    SHARD_INDEX,
)
INDEX_PATH_ESCAPE = rule(
    "FILES-INDEX-PATH-ESCAPE",
    FAMILY,
    Severity.ERROR,
    "the index names a shard path outside the checkpoint folder",
    SHARD_INDEX,
)
FILE_UNREADABLE = rule(
    "FILES-UNREADABLE",
    FAMILY,
    Severity.ERROR,
    "a file in the drafter folder cannot be opened (a symlink loop); the folder is not loadable as shipped",
    "https://man7.org/linux/man-pages/man2/open.2.html#ERRORS",
)
CONFIG_NONSTANDARD_JSON = rule(
    "FILES-CONFIG-NONSTANDARD-JSON",
    FAMILY,
    Severity.INFO,
    "config.json uses NaN/Infinity, which Python's json (and so the engines) accepts but JSON does not",
    "https://docs.python.org/3/library/json.html#infinite-and-nan-number-values",
)

_BY_KIND: dict[str, tuple[Rule, str | None]] = {
    "config-missing": (CONFIG_MISSING, "add the drafter's config.json (architectures, hidden_size, vocab sizes)"),
    "config-invalid": (CONFIG_INVALID, "fix the JSON syntax; engines refuse to load the drafter otherwise"),
    "no-weights": (NO_WEIGHTS, "save the drafter with safetensors (save_pretrained(..., safe_serialization=True))"),
    "pickle-only": (PICKLE_ONLY, "convert to safetensors in a trusted environment; pickles can run code when loaded"),
    "pickle-ignored": (PICKLE_IGNORED, "remove them if the safetensors weights are complete"),
    "header": (HEADER_INVALID, "re-save the file; it is corrupt or not safetensors"),
    "unreadable": (HEADER_INVALID, "check the file's permissions"),
    "truncated": (TRUNCATED, "the upload or copy was cut short: fetch the file again"),
    "dtype": (DTYPE_UNKNOWN, "re-save with a standard dtype (BF16, F16, F32, I64, BOOL)"),
    "size": (TENSOR_SIZE, "re-save the file; its header disagrees with its data"),
    "overlap": (OFFSETS_OVERLAP, "re-save the file; its header is corrupt"),
    "gap": (OFFSETS_GAP, "re-save the file; it was edited or concatenated by hand"),
    "index-invalid": (INDEX_INVALID, 'regenerate the index: {"weight_map": {tensor: shard file}}'),
    "shard-missing": (SHARD_MISSING, "download the missing shard or regenerate the index"),
    "index-tensor-missing": (INDEX_TENSOR_MISSING, "regenerate the index from the shards' headers"),
    "index-unlisted": (INDEX_UNLISTED, "regenerate the index so every tensor is listed once"),
    "duplicate": (TENSOR_DUPLICATE, "keep each tensor in exactly one file"),
    "path-escape": (INDEX_PATH_ESCAPE, "shard names must be plain file names inside the folder"),
    "file-unreadable": (FILE_UNREADABLE, "replace the link with the file it should point at, or remove it"),
    "config-nonfinite": (CONFIG_NONSTANDARD_JSON, "write a number (or null) where the value is not meant to be NaN"),
}


def run(ctx: CheckContext) -> Iterator[Finding]:
    for issue in ctx.checkpoint.issues:
        known = _BY_KIND.get(issue.kind)
        if known is None:
            continue
        defined, hint = known
        yield defined.finding(issue.message, location=issue.location, hint=hint)
