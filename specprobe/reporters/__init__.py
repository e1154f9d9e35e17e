"""Output formats, registered by name: adding a format is adding one module and one entry here."""

from __future__ import annotations

from specprobe.reporters.base import Reporter
from specprobe.reporters.json import JsonReporter
from specprobe.reporters.text import TextReporter

REPORTERS: dict[str, type[Reporter]] = {
    TextReporter.name: TextReporter,
    JsonReporter.name: JsonReporter,
}

__all__ = ["REPORTERS", "Reporter"]
