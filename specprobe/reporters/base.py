"""The reporter interface: a report in, the text of one output format out."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING

from specprobe.findings import Report

if TYPE_CHECKING:
    from specprobe.rules import Rule


class Reporter(ABC):
    """One output format. Subclasses are registered by name in ``specprobe.reporters.REPORTERS``.

    ``strict`` is the run's exit policy (warnings fail too), for formats that mark pass or fail per
    finding (JUnit); ``rules`` looks rule metadata up by ID (default: every registered rule with its
    why/fix filled from the shipped rule docs, read only when a format asks for rule metadata), so that
    tests can render against a fixed catalogue.
    """

    name: str
    description: str

    def __init__(
        self, *, color: bool = False, strict: bool = False, rules: Mapping[str, Rule] | None = None
    ) -> None:
        self.color = color
        self.strict = strict
        self._rules = rules

    @property
    def rules(self) -> Mapping[str, Rule]:
        if self._rules is None:
            from specprobe.ruledocs import documented_rules

            self._rules = {r.id: r for r in documented_rules()}
        return self._rules

    @abstractmethod
    def render(self, report: Report) -> str:
        """The whole output for ``report``, ending with a newline."""
