"""Rule registry: every rule has a stable ID, a default severity, a one-line description and evidence.

Rule families live in their own modules under this package and register their rules here; the
``specprobe rules`` listing and the generated docs are built from ``RULES``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from specprobe.findings import Finding, Severity


@dataclass(frozen=True)
class Rule:
    """A check with a stable ID; ``finding`` stamps its ID, severity and evidence on an observation."""

    id: str
    family: str
    severity: Severity
    description: str
    evidence: tuple[str, ...] = field(default_factory=tuple)
    # Longer text for `specprobe rule ID`, SARIF help and docs/rules/: what goes wrong in the engine
    # when the rule fires, and what to change. Keyword-only in ``rule()``; optional.
    why: str | None = None
    fix: str | None = None

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
    why: str | None = None,
    fix: str | None = None,
) -> Rule:
    """Define and register a rule; IDs are unique across all families."""
    if id in RULES:
        raise ValueError(f"duplicate rule id {id}")
    if not evidence:
        raise ValueError(f"rule {id} needs evidence")
    defined = Rule(
        id=id, family=family, severity=severity, description=description, evidence=evidence, why=why, fix=fix
    )
    RULES[id] = defined
    return defined
