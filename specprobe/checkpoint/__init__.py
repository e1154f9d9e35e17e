"""Drafter checkpoints read without loading them: safetensors headers, shard index, layout and vocab map.

Nothing here imports torch or the safetensors library, and nothing ever writes into the folder read;
the writer in ``writer`` builds real-format checkpoints for tests, the demo and benchmarks.
"""

from specprobe.checkpoint.folder import Checkpoint, FileIssue, TensorInfo, load_checkpoint
from specprobe.checkpoint.layout import DRAFT_FORMATS, Layout, detect_layout

__all__ = ["DRAFT_FORMATS", "Checkpoint", "FileIssue", "Layout", "TensorInfo", "detect_layout", "load_checkpoint"]
