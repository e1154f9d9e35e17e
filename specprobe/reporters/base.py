"""The reporter interface: a report in, the text of one output format out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING

from specprobe.findings import Report, Severity
from specprobe.ruledocs import documented_rules

if TYPE_CHECKING:
    from specprobe.rules import Rule


class Reporter(ABC):
    """One output format. Subclasses are registered by name in ``specprobe.reporters.REPORTERS``.

    Whether a finding or the run fails is the report's own decision (``Report.fail_on``,
    ``Report.fails``, ``Report.ok``, the policy of ``findings.exit_code``): a reporter never recomputes
    it, so every format agrees with the exit code. ``rules`` looks rule metadata up by ID (default:
    every registered rule with its why/fix filled from the shipped rule docs, read only when a format
    asks for rule metadata), so that tests can render against a fixed catalogue. ``width`` is the
    terminal width formats for people wrap at (None: no wrapping); ``sarif_level`` the mildest
    severity SARIF keeps as results; ``quiet`` asks the formats for people to show only what
    fails or warns and the verdict (machine formats ignore it: a document is whole).
    """

    name: str
    description: str

    def __init__(
        self,
        *,
        color: bool = False,
        rules: Mapping[str, Rule] | None = None,
        width: int | None = None,
        sarif_level: Severity = Severity.WARNING,
        quiet: bool = False,
    ) -> None:
        self.color = color
        self._rules = rules
        self.width = width
        self.sarif_level = sarif_level
        self.quiet = quiet

    @property
    def rules(self) -> Mapping[str, Rule]:
        if self._rules is None:
            self._rules = {r.id: r for r in documented_rules()}
        return self._rules

    @abstractmethod
    def render(self, report: Report) -> str:
        """The whole output for ``report``, ending with a newline."""
