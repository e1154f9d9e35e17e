"""The deployment fixtures of tests/deploy (imported as pytest names it, its folder being a package under
tests/, which pytest puts on sys.path): a demo target with a good and a broken drafter, no live
engine, an empty hub cache; shared rather than written twice."""

from __future__ import annotations

from deploy.conftest import _no_live_engine, demo, line_of

__all__ = ["_no_live_engine", "demo", "line_of"]
