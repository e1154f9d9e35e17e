"""The fix plan's vocabulary: a change (a FIX-* finding with before/after), a blocker, a tensor of the
copy with where its bytes come from, the target as fix sees it, and the plan itself."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specprobe.checkpoint.folder import Checkpoint
from specprobe.checkpoint.rewrite import ByteRange
from specprobe.checkpoint.safetensors_header import DTYPE_SIZES
from specprobe.findings import Finding
from specprobe.hfconfig import ModelConfig
from specprobe.rules import Rule


@dataclass(frozen=True)
class Change:
    """One change of the copy: a FIX-* rule, what changes, the value before and after, why, evidence."""

    rule: Rule
    what: str
    before: str
    after: str
    why: str
    location: str | None = None
    evidence: tuple[str, ...] = ()

    def finding(self) -> Finding:
        finding = self.rule.finding(f"{self.what}: {self.before} -> {self.after}; {self.why}", location=self.location)
        # The release's own source first: the text reporter shows the first link.
        finding.evidence = list(dict.fromkeys([*self.evidence, *self.rule.evidence]))
        return finding

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule.id,
            "what": self.what,
            "before": self.before,
            "after": self.after,
            "why": self.why,
            "location": self.location,
            "evidence": list(dict.fromkeys([*self.evidence, *self.rule.evidence])),
        }


@dataclass(frozen=True)
class Blocker:
    """Why the drafter cannot be fixed for the release: a plain statement, and what would work instead."""

    rule: Rule
    message: str
    location: str | None = None
    hint: str | None = None
    evidence: tuple[str, ...] = ()

    def finding(self) -> Finding:
        finding = self.rule.finding(self.message, location=self.location, hint=self.hint)
        finding.evidence = list(dict.fromkeys([*self.evidence, *self.rule.evidence]))
        return finding


@dataclass
class PlannedTensor:
    """A tensor of the copy: its name, file, dtype, shape and where its bytes come from.

    ``origin`` is ``copied`` (byte ranges of the drafter), ``derived`` (computed: ``data``) or ``target``
    (byte ranges of the target's files)."""

    name: str
    file: str
    dtype: str
    shape: tuple[int, ...]
    origin: str
    source_name: str | None = None
    ranges: tuple[ByteRange, ...] = ()
    data: bytes | None = None
    note: str | None = None

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * DTYPE_SIZES[self.dtype]


@dataclass
class TargetFiles:
    """The target as fix sees it: its config.json, and its folder and headers when it is local."""

    spec: str
    config: ModelConfig
    folder: Path | None = None
    checkpoint: Checkpoint | None = None


@dataclass
class FixPlan:
    """Everything ``apply`` writes and the report says, computed without writing."""

    draft_dir: Path
    engine: str
    version: str
    target: TargetFiles
    source_format: str | None
    out_format: str | None = None
    config: dict[str, Any] = field(default_factory=dict)
    tensors: list[PlannedTensor] = field(default_factory=list)
    files: dict[str, str] = field(default_factory=dict)  # output weight file -> __metadata__ format
    copied_files: list[str] = field(default_factory=list)
    index_file: str | None = None
    changes: list[Change] = field(default_factory=list)
    blockers: list[Blocker] = field(default_factory=list)

    @property
    def engine_label(self) -> str:
        return f"{self.engine}=={self.version}"

    @property
    def fixable(self) -> bool:
        return not self.blockers

    def change(self, rule: Rule, what: str, before: Any, after: Any, why: str, **kwargs: Any) -> None:
        self.changes.append(Change(rule, what, show(before), show(after), why, **kwargs))

    def block(self, rule: Rule, message: str, **kwargs: Any) -> None:
        self.blockers.append(Blocker(rule, message, **kwargs))

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "source_format": self.source_format,
            "out_format": self.out_format,
            "changes": [c.to_json_dict() for c in self.changes],
            "tensors": [
                {
                    "name": t.name,
                    "file": t.file,
                    "dtype": t.dtype,
                    "shape": list(t.shape),
                    "origin": t.origin,
                    "source_name": t.source_name,
                    **({"note": t.note} if t.note else {}),
                }
                for t in self.tensors
            ],
            "copied_files": list(self.copied_files),
        }


def show(value: Any) -> str:
    if value is None:
        return "(absent)"
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
