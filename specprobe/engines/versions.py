"""Engine release versions: the one PEP 440 parse that never raises, and the one ordering of evidence
links that puts the engine being checked first.

Versions come from untrusted places (an image tag, a manifest, an engine's own ``__version__``, a
snapshot's file name), so a text that is not PEP 440 is an answer (None), never an exception.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

# Which GitHub organisation an engine's source links live under.
_PROJECT = {"vllm": "vllm-project", "sglang": "sgl-project"}


def parse_version(text: str | None) -> Version | None:
    """``text`` as a PEP 440 version, or None when it is empty or not one."""
    if not text:
        return None
    try:
        return Version(text)
    except (InvalidVersion, TypeError):
        return None


def same_version(left: str, right: str) -> bool:
    """Whether two version texts name one release (``0.33`` and ``0.33.0``); texts that are not PEP 440
    are compared as written."""
    parsed_left, parsed_right = parse_version(left), parse_version(right)
    if parsed_left is None or parsed_right is None:
        return left == right
    return parsed_left == parsed_right


def engine_first(evidence: Iterable[str], engine: str | None) -> list[str]:
    """``evidence`` with ``engine``'s own links first, in their order, then the rest in theirs.

    Rules shared by both engines cite both; reporters show the first link, which must be the source
    of the engine being checked."""
    links = list(evidence)
    project = _PROJECT.get(engine or "")
    if project is None:
        return links
    return sorted(links, key=lambda url: project not in url)
