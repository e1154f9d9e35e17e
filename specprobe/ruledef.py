"""What a rule is: the ``Rule`` type, its lifecycle and engine range, and the one registry (``RULES``)
that every rule family registers into when its module is imported.

This sits below every package that defines rules: the rule families of ``specprobe.rules`` and the
DEPLOY-* catalogue beside the deployment parsers (``specprobe.deploy.rules``) both call ``rule``, so
neither has to import upward. ``specprobe.rules`` re-exports these names; the explicit table of family
modules is ``specprobe.rules.catalog.FAMILY_MODULES``. A rule's longer documentation (``why``, ``fix``)
has one home, ``specprobe/data/rule_docs.toml``, read only by the explaining paths
(``ruledocs.documented``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from specprobe.engines.facts import answer, fact
from specprobe.findings import Finding, Severity


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
    """The engine releases a rule is about: those where engine fact ``fact`` (specprobe/data/
    engine_facts/) has ``value``. The range is data, stated once beside the evidence that shows it,
    so a release that changes the behaviour changes the rule's range with no edit here."""

    engine: str
    fact: str
    value: Any

    def versions(self) -> list[str]:
        """The PEP 440 ranges of the fact that hold ``value`` (``["<0.22.0"]``)."""
        # Imported here: the facts are YAML read on first use, and most commands never explain a rule.
        found = fact(self.engine, self.fact)
        if found is None:  # a definition error of specprobe itself, caught by the catalogue tests
            raise ValueError(f"applies_to names no engine fact {self.engine}/{self.fact}")
        return [str(r.versions) or "any" for r in found.ranges if r.value == self.value]

    def contains(self, engine: str, version: str | None) -> bool | None:
        """Whether ``engine`` ``version`` is in range; None when the version is unknown or not PEP 440."""
        if engine != self.engine:
            return False
        found = answer(engine, version, self.fact) if version else None
        if found is None:
            return None
        return bool(found.value == self.value)

    def __str__(self) -> str:
        return f"{self.engine} {' or '.join(self.versions())}"


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


def within_lifecycle(findings: Iterable[Finding], engines: Sequence[tuple[str, str | None]]) -> list[Finding]:
    """The findings whose rule is about the engine releases judged: a removed rule's never (it stays
    registered only so configurations naming it load); a rule with an engine range only when one of
    ``engines`` is in that range or has an unknown version. Like a linter's rules that do not run for a
    target version, the others are not findings at all, so they are not counted as suppressed. Findings
    of ids the registry does not hold are kept."""
    return [f for f in findings if (r := RULES.get(f.rule)) is None or _about(r, engines)]


def _about(defined: Rule, engines: Sequence[tuple[str, str | None]]) -> bool:
    if defined.status is RuleStatus.REMOVED:
        return False
    if defined.applies_to is None or not engines:
        return True
    return any(defined.applies(engine, version) for engine, version in engines)
