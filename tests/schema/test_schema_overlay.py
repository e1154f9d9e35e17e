"""The overlay method (a release's own package laid over another release's dependencies) against a
full install of the same release with its own pinned dependencies.

``data/overlay/`` keeps snapshots made by the overlay (vLLM 0.16.0, 0.18.0, 0.28.0 over vLLM 0.33.0's
dependencies; SGLang 0.5.10 over 0.5.23's), written by an earlier probe; the shipped snapshots of the
same releases come from full installs. What both probes extract must agree: the overlay changes the
libraries around the engine, not the engine's own code that defines its speculative surface.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specprobe.schema.model import EngineSchema
from specprobe.schema.store import load_snapshot

DATA = Path(__file__).parent / "data" / "overlay"
OVERLAID = sorted(path.stem for path in DATA.glob("*.json"))


def full_install(engine: str, version: str) -> EngineSchema | None:
    shipped = load_snapshot(engine, version)
    if shipped is None or shipped.provenance.get("overlay") is not False:
        return None
    return shipped


def compared() -> list[str]:
    return [name for name in OVERLAID if full_install(*name.split("-", 1)) is not None]


def test_at_least_two_releases_are_compared():
    assert len(compared()) >= 2, f"full-install snapshots shipped for: {compared()}"


@pytest.mark.parametrize("name", OVERLAID)
def test_overlay_agrees_with_the_full_install(name):
    engine, version = name.split("-", 1)
    full = full_install(engine, version)
    if full is None:
        pytest.skip(f"no full-install snapshot of {engine} {version} shipped")
    overlay = EngineSchema.from_json((DATA / f"{name}.json").read_text(encoding="utf-8"))
    assert "--no-deps" in overlay.provenance["installed_by"]
    assert overlay.version == full.version
    assert overlay.methods == full.methods
    assert overlay.reserved_methods == full.reserved_methods
    assert list(overlay.parameters) == list(full.parameters)
    for parameter, spec in overlay.parameters.items():
        other = full.parameters[parameter]
        assert (spec.type, spec.default, spec.internal, spec.flag, spec.constraints, spec.description) == (
            other.type, other.default, other.internal, other.flag, other.constraints, other.description
        ), parameter
    assert overlay.draft_architectures == full.draft_architectures
    assert overlay.eagle3_target_supported == full.eagle3_target_supported
    # The dependencies differ, which is the point of the comparison.
    assert json.dumps(overlay.provenance.get("dependencies")) != json.dumps(full.provenance.get("dependencies"))
