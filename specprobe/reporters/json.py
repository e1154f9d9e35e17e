"""JSON reporter: the machine-readable contract (README.md, "The JSON report")."""

from __future__ import annotations

import json

from specprobe.findings import Report
from specprobe.reporters.base import Reporter


class JsonReporter(Reporter):
    name = "json"
    description = "the JSON report described in README.md (findings, summary, ok, and command-specific keys)"

    def render(self, report: Report) -> str:
        return json.dumps(report.to_json_dict(), indent=2, sort_keys=False) + "\n"
