"""Rule registry: every rule has a stable ID, a default severity, a one-line description and evidence.

Rule families live in their own modules under this package and register their rules here; the
explicit table of those modules is ``rules.catalog.FAMILY_MODULES``. A rule's longer documentation
(``why``, ``fix``) has one home, ``specprobe/data/rule_docs.toml``, read only by the explaining paths
(``ruledocs.documented``); the ``specprobe rules`` listing and the generated docs are built from ``RULES``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from specprobe.findings import Finding, Severity
from specprobe.versions import parse_version


class RuleStatus(StrEnum):
    """Where a rule is in its life, as ruff's rule groups: ``stable`` rules are part of the contract,
    ``preview`` ones may still change, ``deprecated`` ones will go (their engine releases are past),
    ``removed`` ones no longer fire and stay listed so that configurations naming them still load."""

    STABLE = "stable"
    PREVIEW = "preview"
    DEPRECATED = "deprecated"
    REMOVED = "removed"


@dataclass(frozen=True)
class AppliesTo:
    """The engine releases a rule is about: ``engine`` and a PEP 440 range (``<0.22``)."""

    engine: str
    versions: str

    def __post_init__(self) -> None:
        try:
            SpecifierSet(self.versions)
        except InvalidSpecifier as exc:  # a definition error of specprobe itself
            raise ValueError(f"applies_to {self.engine} {self.versions!r}: {exc}") from None

    def contains(self, engine: str, version: str | None) -> bool | None:
        """Whether ``engine`` ``version`` is in range; None when the version is unknown or not PEP 440."""
        if engine != self.engine:
            return False
        parsed = parse_version(version)
        if parsed is None:
            return None
        return parsed in SpecifierSet(self.versions, prereleases=True)

    def __str__(self) -> str:
        return f"{self.engine} {self.versions}"


@dataclass(frozen=True)
class Rule:
    """A check with a stable ID; ``finding`` stamps its ID, severity and evidence on an observation."""

    id: str
    family: str
    severity: Severity
    description: str
    evidence: tuple[str, ...] = field(default_factory=tuple)
    # Longer text for `specprobe rule ID`, SARIF help and docs/rules/: what goes wrong in the engine
    # when the rule fires, and what to change. Filled from data/rule_docs.toml by ruledocs.documented.
    why: str | None = None
    fix: str | None = None
    status: RuleStatus = RuleStatus.STABLE
    applies_to: AppliesTo | None = None

    def applies(self, engine: str, version: str | None) -> bool:
        """Whether the rule is about ``engine`` ``version`` (a rule without a range is about every
        release; an unknown version is given the benefit of the doubt)."""
        if self.status is RuleStatus.REMOVED:
            return False
        if self.applies_to is None:
            return True
        return self.applies_to.contains(engine, version) is not False

    def finding(
        self,
        message: str,
        *,
        location: str | None = None,
        hint: str | None = None,
        severity: Severity | None = None,
        evidence: tuple[str, ...] | list[str] = (),
        key: str | None = None,
    ) -> Finding:
        return Finding(
            rule=self.id,
            severity=severity or self.severity,
            message=message,
            location=location,
            hint=hint,
            evidence=[*self.evidence, *evidence],
            key=key,
        )


RULES: dict[str, Rule] = {}


def rule(
    id: str,
    family: str,
    severity: Severity,
    description: str,
    *evidence: str,
    status: RuleStatus = RuleStatus.STABLE,
    applies_to: AppliesTo | None = None,
) -> Rule:
    """Define and register a rule; IDs are unique across all families."""
    if id in RULES:
        raise ValueError(f"duplicate rule id {id}")
    if not evidence:
        raise ValueError(f"rule {id} needs evidence")
    defined = Rule(
        id=id,
        family=family,
        severity=severity,
        description=description,
        evidence=evidence,
        status=RuleStatus(status),
        applies_to=applies_to,
    )
    RULES[id] = defined
    return defined
