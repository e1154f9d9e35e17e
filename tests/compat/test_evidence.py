"""Every evidence link a user is shown must open and must not drift: GitHub links pinned to a tag or
a commit, documentation pinned to a version, repository-relative pages present in this checkout, and
acceptance figures only beside a source that shows them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from specprobe.compat.loader import load_matrix
from specprobe.compat.model import EntryKind
from specprobe.engines.facts import all_facts
from specprobe.rules.catalog import all_rules

ROOT = Path(__file__).resolve().parents[2]
# /blob/ or /tree/ followed by a tag (v1.2.3, 1.2.3) or a full commit sha; never a branch.
GITHUB_PINNED = re.compile(r"^https://github\.com/[^/]+/[^/]+/(blob|tree)/(v?\d+(\.\d+)+(\.post\d+)?|[0-9a-f]{40})/")
GITHUB_THREAD = re.compile(r"^https://github\.com/[^/]+/[^/]+/((issues|pull)/\d+(#[\w-]+)?|releases)$")
HF_DOCS_PINNED = re.compile(r"^https://huggingface\.co/docs/[^/]+/v\d+(\.\d+)+/")
BRANCHES = re.compile(r"/(blob|tree)/(main|master|develop)/|/docs/[^/]+/main/")


def _fact_links() -> list[tuple[str, str]]:
    """Every link of every engine fact in specprobe/data/engine_facts/ (templates expanded)."""
    return [
        (f"engine fact {fact.engine}:{fact.name} {rng.versions or '(every release)'}", url)
        for fact in all_facts()
        for rng in fact.ranges
        for url in rng.links()
    ]


def _all_links() -> list[tuple[str, str]]:
    links = [(f"rule {r.id}", url) for r in all_rules() for url in r.evidence]
    links += [(f"matrix {e.id}", url) for e in load_matrix() for url in e.evidence]
    links += _fact_links()
    return links


def test_every_engine_fact_cites_a_link_pinned_to_a_tag_or_a_thread() -> None:
    links = _fact_links()
    assert len(links) >= 50  # every range of every fact, templates expanded per release
    for owner, url in links:
        assert url.startswith("https://github.com/"), f"{owner}: {url} is not engine source or a thread"
        assert _check(url) is None, f"{owner}: {url} {_check(url)}"


def _check(url: str) -> str | None:
    """Why ``url`` is not a link a user can follow for good; None when it is."""
    if BRANCHES.search(url):
        return "points at a branch, which drifts"
    if url.startswith("https://github.com/"):
        if GITHUB_PINNED.match(url) or GITHUB_THREAD.match(url):
            return None
        return "is a GitHub link pinned to neither a tag nor a commit"
    if url.startswith("https://huggingface.co/docs/hub/"):
        return None  # the Hub's documentation has no versions
    if url.startswith("https://huggingface.co/docs/"):
        return None if HF_DOCS_PINNED.match(url) else "is Hugging Face documentation not pinned to a version"
    if url.startswith("https://"):
        return None
    if url.startswith("smoke-run:"):
        return None  # a recorded smoke run, checked by the matrix record tests
    path = url.split("#", 1)[0]
    return None if (ROOT / path).is_file() else "is a repository page that does not exist"


@pytest.mark.parametrize(("owner", "url"), _all_links())
def test_evidence_link_is_pinned_and_resolves(owner: str, url: str) -> None:
    assert _check(url) is None, f"{owner}: {url} {_check(url)}"


@pytest.mark.parametrize(
    ("url", "ok"),
    [
        ("https://github.com/vllm-project/vllm/blob/main/vllm/config/speculative.py", False),
        ("https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/speculative.py", True),
        ("https://github.com/SafeAILab/EAGLE/blob/bfeb532e689a3db4e1a9081c7c83219c9385e84a/eagle/model/cnets.py", True),
        ("https://github.com/vllm-project/vllm/issues/48894", True),
        ("https://github.com/huggingface/safetensors#format", False),
        ("https://huggingface.co/docs/transformers/main/en/custom_models", False),
        ("https://huggingface.co/docs/transformers/v4.57.0/en/custom_models", True),
        ("FIELD_NOTES.md#the-field-report-that-started-it", False),
        ("docs/evidence/field-report-kimi-k25.md", True),
    ],
)
def test_the_pin_check_itself(url: str, ok: bool) -> None:
    assert (_check(url) is None) is ok


def test_acceptance_figures_come_with_a_source_that_is_cited() -> None:
    for entry in load_matrix():
        if entry.acceptance is None or entry.kind is EntryKind.MEASURED:
            continue
        assert entry.acceptance.source, f"{entry.id} carries acceptance figures without a source"
        assert entry.acceptance.source in entry.evidence, f"{entry.id}: the source is not among its evidence"
