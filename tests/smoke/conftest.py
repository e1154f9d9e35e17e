"""Helpers of the smoke tests; their models come from the suite-wide ``demo_models`` fixture (tests/conftest.py)."""

from __future__ import annotations

import json


def read_json(text: str) -> dict:
    return json.loads(text)
