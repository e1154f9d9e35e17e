"""The finding for a bug in specprobe itself: a rule family that raised. Never a pass (exit 2)."""

from __future__ import annotations

from specprobe.findings import Finding, Severity
from specprobe.rules import rule

INTERNAL_ERROR = rule(
    "INTERNAL-ERROR",
    "internal",
    Severity.ERROR,
    "a rule family raised instead of reporting; its checks did not run, so the command exits 2, never 0",
    "docs/evidence/internal-error.md",
)


def internal_error(where: str, exc: BaseException) -> Finding:
    """The finding for ``exc`` raised inside ``where`` (a rule family or a command's rule step)."""
    return INTERNAL_ERROR.finding(
        f"internal error in {where}: {type(exc).__name__}: {exc}"[:500],
        hint="this is a bug in specprobe: please report it with the command and, if you can, the input",
    )
