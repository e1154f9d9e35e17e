"""Matrix entries that cite an engine issue say which releases they hold for, read from the release code.

An entry with ``rests_on`` names the engine fact (``specprobe/data/engine_facts``, each value read in the
releases' own source) its version range follows: at every shipped snapshot of the engine, the entry's
range contains the release exactly when the fact has the named value there. An entry that cites an issue
without ``rests_on`` is a report the release code cannot confirm (acceptance measured by users, behaviour
under load); each such entry is listed here with the reason, so a new one has to choose.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.specifiers import SpecifierSet

from specprobe.compat.loader import data_dir
from specprobe.engines.facts import answer
from specprobe.schema.store import known_versions

ISSUE = re.compile(r"github\.com/[^/]+/[^/]+/(issues|pull)/\d+")

# Entries that cite an issue and rest on a report, not on code a release ships (reason in the entry).
REPORTED_ONLY = frozenset({
    "eagle3-long-context-decay", "mtp-mla-target-with-mtp-layers", "vllm-eagle3-llama-draft-mla-target",
    "sglang-eagle3-mla-target", "sglang-eagle-algorithm-eagle3-checkpoint", "sglang-mla-topk-gt-1",
    "sglang-structured-output-eagle", "sglang-eagle3-llama-target", "sglang-eagle3-qwen3-next",
    "sglang-eagle3-hybrid-linear-other", "vllm-eagle3-target-allowlist", "vllm-eagle3-before-0.8.5",
    "vllm-eagle3-llama-target", "vllm-eagle3-qwen3-moe-before-support", "vllm-eagle-method-eagle3-checkpoint",
    "vllm-medusa-mlp-speculator-removed", "vllm-mlp-speculator-unrouted-v1", "vllm-lora-spec-decode",
    "vllm-min-p-spec-decode", "vllm-logit-bias-spec-decode", "vllm-pipeline-parallel-spec-decode",
    "vllm-eagle3-sliding-window-target", "vllm-draft-model-multi-kv-group-drafter",
    # A state-indexing race under load (vllm#40738, open): the range is the reports', not a release fact.
    "vllm-model-free-hybrid-linear-target",
})


def _entries() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for path in sorted(Path(data_dir()).glob("*.yaml")):
        found.extend((yaml.safe_load(path.read_text(encoding="utf-8")) or {}).get("entries", []))
    return found


CITING = [e for e in _entries() if any(ISSUE.search(u) for u in e.get("evidence", []))]


@pytest.mark.parametrize("entry", CITING, ids=[e["id"] for e in CITING])
def test_entry_citing_an_issue_follows_the_release_code(entry: dict[str, Any]) -> None:
    rests_on = entry.get("rests_on")
    if rests_on is None:
        assert entry["id"] in REPORTED_ONLY, (
            f"{entry['id']} cites an issue but names no engine fact its range follows (rests_on)"
        )
        return
    assert entry["engine"] in ("vllm", "sglang"), entry["id"]
    span = SpecifierSet(entry["versions"])
    judged = 0
    for version in known_versions(entry["engine"]):
        fact = answer(entry["engine"], version, rests_on["fact"])
        if fact is None or fact.beyond_newest:
            continue
        judged += 1
        holds = fact.value == rests_on["value"]
        assert span.contains(version, prereleases=True) == holds, (
            f"{entry['id']}: at {entry['engine']}=={version} the fact {rests_on['fact']} is {fact.value!r} "
            f"({fact.evidence}) but the entry's range {entry['versions']!r} says otherwise"
        )
    assert judged >= 2, f"{entry['id']}: the fact answers for fewer than two shipped snapshots"


def test_hybrid_entry_ends_where_the_capture_was_added() -> None:
    """The Qwen3-Next/Qwen3.5 entry (vllm#36527) no longer applies to 0.33.0, which captures the states."""
    entry = next(e for e in _entries() if e["id"] == "vllm-eagle3-hybrid-linear-target")
    span = SpecifierSet(entry["versions"])
    assert not span.contains("0.33.0") and span.contains("0.17.0")


def test_reported_only_names_existing_entries() -> None:
    ids = {e["id"] for e in CITING}
    assert ids >= REPORTED_ONLY, sorted(REPORTED_ONLY - ids)
