"""Findings, reports and the exit-code policy shared by every finding-producing command.

The exit-code policy lives here and nowhere else: 0 no error findings (warnings allowed unless
strict), 1 at least one error (or a warning under strict), 2 the command could not run. A report
carries the policy of its run (``Report.fail_on``), so every format's verdict (``Report.ok``, the
text PASS/FAIL, SARIF's ``properties.ok``, JUnit failures) is the exit code's own decision.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields
from enum import IntEnum, StrEnum
from typing import Any

from specprobe import __version__


class Severity(StrEnum):
    """How bad a finding is; ordered from worst to mildest by ``rank``."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}[self]


class ExitCode(IntEnum):
    """Documented exit codes; a bad checkpoint is a finding (1), never CANNOT_RUN (2)."""

    OK = 0
    FINDINGS = 1
    CANNOT_RUN = 2


class SpecprobeError(Exception):
    """The command could not run (bad arguments, missing path, engine crash): exit 2, one line."""


# Plain dataclasses, not pydantic models: every command (and --help) imports this module, and
# pydantic's import and schema building would cost more than a whole header-only check.
@dataclass
class Finding:
    """One observation about the deployment, produced by a rule with a stable ID."""

    rule: str
    severity: Severity
    message: str
    location: str | None = None
    hint: str | None = None
    evidence: list[str] = field(default_factory=list)
    # Where in a user's file the finding points (a deployment manifest line, a config.json key's
    # file), for SARIF, annotations and code-quality reports; ``location`` stays the readable form.
    file: str | None = None
    line: int | None = None
    # Which deployment of a multi-deployment input the finding belongs to (gate's report sections).
    deployment: str | None = None
    # The setting the finding is about: a normalised flag (``--speculative-eagle-topk``) or a
    # speculative-config key (``speculative.num_speculative_tokens``), as the deployment's SourceMap
    # names them, or a checkpoint's ``config.json:<key>``. Set by the rule that knows it, so a
    # finding's line is a lookup, never a search of its message.
    key: str | None = None

    def __post_init__(self) -> None:
        # Accept "error"/"warning"/"info" as well as the enum, as the JSON contract spells them.
        self.severity = Severity(self.severity)
        self.evidence = list(self.evidence)

    def to_json_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
            "location": self.location,
            "hint": self.hint,
            "evidence": list(self.evidence),
        }
        # Optional keys appear only when set, so single-subject reports keep the documented shape.
        for key in ("file", "line", "deployment", "key"):
            value = getattr(self, key)
            if value is not None:
                data[key] = value
        return data


@dataclass(frozen=True)
class Summary:
    errors: int = 0
    warnings: int = 0
    infos: int = 0

    def to_json_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Section:
    """One deployment a report covers (gate's report sections): where it is and what it runs.

    Reporters give each section its own block, so a deployment without findings still shows as
    passing; the JSON report lists them under ``deployments``.
    """

    name: str
    file: str | None = None
    line: int | None = None
    engine: str | None = None
    version_source: str | None = None
    image: str | None = None
    target: str | None = None
    draft: str | None = None
    method: str | None = None
    device: str | None = None

    def to_json_dict(self) -> dict[str, Any] | str:
        """Every field (null when unknown), in declaration order; a section known by its name alone
        (no file, no engine: nothing a gate over files produces) is written as that name."""
        data = asdict(self)
        if all(value is None for key, value in data.items() if key != "name"):
            return self.name
        return data


@dataclass
class Measurement:
    """What a smoke run measured: acceptance (from the reference backend, a server's counters or an
    engine it served) and speed. The figures every backend reports are fields; what only one backend
    knows (divergences, timings, the device, the metrics' source, the reference's figures beside an
    engine's) stays in ``details``, written to JSON after the fields."""

    acceptance_rate: float | None = None
    mean_acceptance_length: float | None = None
    per_position: list[float | None] = field(default_factory=list)
    drafts: int | None = None
    draft_tokens: int | None = None
    accepted_tokens: int | None = None
    num_speculative_tokens: int | None = None
    ci95: list[float | None] = field(default_factory=list)
    # None when not judged (a server's counters alone cannot tell).
    lossless: bool | None = None
    tokens: int | None = None
    tokens_per_s: float | None = None
    speedup: float | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_figures(cls, figures: dict[str, Any]) -> Measurement:
        """The figures of one backend's result: the shared ones as fields, the rest as details."""
        names = {f.name for f in fields(cls)} - {"details"}
        known = {key: value for key, value in figures.items() if key in names}
        return cls(**known, details={key: value for key, value in figures.items() if key not in names})

    @property
    def measured(self) -> bool:
        """Whether acceptance was measured at all (not only tokens and time): every backend that reads
        acceptance counts drafts (zero from gauges), even where a figure came out undefined."""
        return self.mean_acceptance_length is not None or self.drafts is not None

    def to_json_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "details"}
        data.update(self.details)
        return data


@dataclass
class Report:
    """The result of one command run: what was examined, what was found, and extra command data.

    ``sections`` are the deployments a multi-deployment run covers (None for a run over one subject);
    ``suppressed`` counts the findings configuration and a baseline took out, by reason. ``extra``
    holds only the command-specific payload (``entries`` for matrix, the measurement for smoke) that
    the JSON reporter writes at top level beside the fixed contract keys; reporters of other formats
    read the typed fields, never ``extra``.
    """

    command: str
    subject: dict[str, str | None] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    sections: list[Section] | None = None
    suppressed: dict[str, int] = field(default_factory=dict)
    # A smoke run's figures; written to JSON at top level, before the command payload.
    measurement: Measurement | None = None
    specprobe_version: str = __version__
    # The mildest severity that fails this run: ERROR, or WARNING under --strict, --fail-on warning
    # or ``fail-on = "warning"`` in the configuration. Set once by the command before reporting.
    fail_on: Severity = Severity.ERROR
    # What to run next, for a person reading a failing (or empty --fix-plan) run: each a whole line
    # such as ``specprobe fix D --target T --engine vllm==0.33.0 --plan``. Set by the command, which
    # asks the planner that can answer (fix), never guessed by a reporter.
    next_steps: list[str] = field(default_factory=list)

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)

    def extend(self, findings: Iterable[Finding]) -> None:
        self.findings.extend(findings)

    def sorted_findings(self) -> list[Finding]:
        """Findings worst first, then by rule ID, keeping discovery order within a rule."""
        return sorted(self.findings, key=lambda f: (f.severity.rank, f.rule))

    @property
    def summary(self) -> Summary:
        counts = dict.fromkeys(Severity, 0)
        for finding in self.findings:
            counts[finding.severity] += 1
        return Summary(
            errors=counts[Severity.ERROR], warnings=counts[Severity.WARNING], infos=counts[Severity.INFO]
        )

    def fails(self, severity: Severity) -> bool:
        """Whether a finding of ``severity`` fails this run (the policy of ``exit_code``)."""
        return fails(severity, self.fail_on)

    @property
    def ok(self) -> bool:
        """The run's verdict: exactly when the exit code is 0."""
        return exit_code(self) is ExitCode.OK

    def fired(self) -> set[str]:
        """Rule IDs that produced at least one finding."""
        return {f.rule for f in self.findings}

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON envelope: the fixed keys, then the command payload, deployments and suppression counts."""
        data: dict[str, Any] = {
            "specprobe_version": self.specprobe_version,
            "command": self.command,
            "subject": self.subject,
            "findings": [f.to_json_dict() for f in self.sorted_findings()],
            "summary": self.summary.to_json_dict(),
            "ok": self.ok,
        }
        if self.measurement is not None:
            for key, value in self.measurement.to_json_dict().items():
                data.setdefault(key, value)
        for key, value in self.extra.items():
            data.setdefault(key, value)
        if self.sections is not None:
            data.setdefault("deployments", [section.to_json_dict() for section in self.sections])
        if self.suppressed:
            data.setdefault("suppressed", dict(self.suppressed))
        if self.next_steps:
            data.setdefault("next_steps", list(self.next_steps))
        return data


INTERNAL_ERROR_RULE = "INTERNAL-ERROR"
"""A rule family that raised: its checks did not run, so the report is not a verdict (exit 2)."""


def fails(severity: Severity, fail_on: Severity = Severity.ERROR) -> bool:
    """Whether a finding of ``severity`` fails a run whose mildest failing severity is ``fail_on``."""
    return severity.rank <= fail_on.rank


def exit_code(report: Report, *, strict: bool = False) -> ExitCode:
    """The one place that turns findings into an exit code: the report's own ``fail_on`` policy,
    made stricter (warnings fail too) by ``strict``."""
    if any(f.rule == INTERNAL_ERROR_RULE for f in report.findings):
        return ExitCode.CANNOT_RUN
    fail_on = Severity.WARNING if strict else report.fail_on
    if any(fails(f.severity, fail_on) for f in report.findings):
        return ExitCode.FINDINGS
    return ExitCode.OK
