"""Output formats, registered by name: adding a format is adding one module and one entry here."""

from __future__ import annotations

from specprobe.reporters.base import Reporter
from specprobe.reporters.github import GithubReporter
from specprobe.reporters.gitlab import GitlabReporter
from specprobe.reporters.json import JsonReporter
from specprobe.reporters.junit import JunitReporter
from specprobe.reporters.markdown import MarkdownReporter
from specprobe.reporters.sarif import SarifReporter
from specprobe.reporters.text import ConciseReporter, TextReporter

REPORTERS: dict[str, type[Reporter]] = {
    reporter.name: reporter
    for reporter in (
        TextReporter,
        ConciseReporter,
        JsonReporter,
        SarifReporter,
        JunitReporter,
        GithubReporter,
        GitlabReporter,
        MarkdownReporter,
    )
}

__all__ = ["REPORTERS", "Reporter"]
