"""docs/evidence/engine-facts.md is generated from specprobe/data/engine_facts/; it must not go stale."""

from __future__ import annotations

from pathlib import Path

from specprobe.engines.facts import DOC_PATH, REGENERATE, all_facts, newest_read, render_markdown

DOC = Path(__file__).parents[2] / DOC_PATH


def test_engine_facts_md_is_current() -> None:
    assert DOC.read_text(encoding="utf-8") == render_markdown(), f"{DOC_PATH} is stale: {REGENERATE}"


def test_every_fact_range_and_link_is_in_the_document() -> None:
    text = DOC.read_text(encoding="utf-8")
    for engine, version in newest_read().items():
        assert f"(read through {version})" in text, engine
    for fact in all_facts():
        assert f"### `{fact.name}`" in text
        for candidate in fact.ranges:
            assert f"`{candidate.versions or 'every release'}`" in text
            for url in candidate.links():
                assert url in text
