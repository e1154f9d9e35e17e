"""The compatibility matrix: known drafter x target-attention x engine-version verdicts, with evidence.

Entries live in ``specprobe/data/compat_matrix/*.yaml`` (validated by the JSON Schema beside them);
``evaluate`` matches them against a ``Pairing`` built from what the user knows about a deployment.
"""

from __future__ import annotations

from specprobe.compat.evaluate import evaluate, evaluate_entry, finding_severity
from specprobe.compat.loader import MatrixError, data_dir, load_matrix
from specprobe.compat.model import Entry, EntryKind, Match, Pairing, Status, Verdict
from specprobe.compat.snapshots import SnapshotFacts, SnapshotSource, StoreSnapshots

__all__ = [
    "Entry",
    "EntryKind",
    "Match",
    "MatrixError",
    "Pairing",
    "SnapshotFacts",
    "SnapshotSource",
    "Status",
    "StoreSnapshots",
    "Verdict",
    "data_dir",
    "evaluate",
    "evaluate_entry",
    "finding_severity",
    "load_matrix",
]
