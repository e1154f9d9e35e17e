"""The deployment fixtures of tests/deploy, imported by their package name: a demo target with a good
and a broken drafter, no live engine, an empty hub cache; shared rather than written twice."""

from __future__ import annotations

from tests.deploy.conftest import _no_live_engine, demo, line_of

__all__ = ["_no_live_engine", "demo", "line_of"]
