"""JSON reporter: the machine-readable contract of DESIGN.md."""

from __future__ import annotations

import json

from specprobe.findings import Report
from specprobe.reporters.base import Reporter


class JsonReporter(Reporter):
    name = "json"
    description = "the JSON report of DESIGN.md (findings, summary, ok, and command-specific keys)"

    def render(self, report: Report) -> str:
        return json.dumps(report.to_json_dict(), indent=2, sort_keys=False) + "\n"
