"""The finding for a bug in specprobe itself: a rule family that raised. Never a pass (exit 2).

``guarded`` is the one crash guard: rule families, a command's rule step and the compatibility matrix
run through it, so a bug anywhere is an INTERNAL-ERROR finding with the same wording and policy."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

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


T = TypeVar("T")


def guarded(where: str, step: Callable[[], T]) -> tuple[T | None, Finding | None]:
    """``(step(), None)``, or ``(None, the INTERNAL-ERROR finding for where)`` when it raises: a bug in
    one step must not hide the others' findings, and is never a pass. The step's result is taken
    whole (a generator is collected by the caller inside ``step``), so a step that raises half-way
    leaves no half verdict behind."""
    try:
        return step(), None
    except Exception as exc:  # any bug, by design: the finding names it
        return None, internal_error(where, exc)
