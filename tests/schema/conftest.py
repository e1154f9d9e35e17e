"""Fixtures for the schema tests: a private live cache (the engine interpreters come from
tests/engine_interpreters.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session", autouse=True)
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One private live-extraction cache for the whole session: each engine is probed uncached once.

    Session-scoped so that it is in place before the module-scoped live fixtures run; tests never
    read or write the user's real cache.
    """
    folder = tmp_path_factory.mktemp("specprobe-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SPECPROBE_CACHE_DIR", str(folder))
        patch.delenv("SPECPROBE_FORMAT", raising=False)
        yield folder
