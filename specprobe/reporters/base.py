"""The reporter interface: a report in, the text of one output format out."""

from __future__ import annotations

from abc import ABC, abstractmethod

from specprobe.findings import Report


class Reporter(ABC):
    """One output format. Subclasses are registered by name in ``specprobe.reporters.REPORTERS``."""

    name: str
    description: str

    def __init__(self, *, color: bool = False) -> None:
        self.color = color

    @abstractmethod
    def render(self, report: Report) -> str:
        """The whole output for ``report``, ending with a newline."""
