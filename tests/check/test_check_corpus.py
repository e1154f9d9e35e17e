"""Corpus tests: every tests/cases/<case>/ is built with the real writer, checked, and compared with
its expected.json (rules that must fire, rules that must not, the verdict)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from specprobe.pipeline.check import run_check
from specprobe.rules.catalog import all_rules
from tests.check.casebuild import SENTINEL, build_case, case_names


def _content_hash(path: Path) -> str:
    """sha256 of the file; of its first and last MiB for multi-GB sparse files (mtime/ctime cover the rest)."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        size = path.stat().st_size
        if size <= 64 * 2**20:
            digest.update(handle.read())
        else:
            digest.update(handle.read(2**20))
            handle.seek(size - 2**20)
            digest.update(handle.read())
    return digest.hexdigest()


def folder_fingerprint(folder: Path) -> dict[str, str]:
    """Names, sizes, mtimes and content hashes of everything under ``folder`` (links not followed)."""
    state: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            rel = str(path.relative_to(folder))
            if path.is_symlink():
                state[rel] = "link:" + str(path.readlink())
            elif path.is_file():
                stat = path.stat()
                state[rel] = f"{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ctime_ns}:{_content_hash(path)}"
            else:
                state[rel] = "dir"
    return state


@pytest.mark.parametrize("case", case_names())
def test_case(case: str, tmp_path: Path) -> None:
    draft_dir, kwargs, expected = build_case(case, tmp_path)
    before = folder_fingerprint(tmp_path)

    report = run_check(draft_dir, **kwargs)

    assert folder_fingerprint(tmp_path) == before, "check wrote into the folders it read"
    assert not (tmp_path / "sandbox" / SENTINEL).exists(), "code from the checkpoint was executed"
    assert "internal_errors" not in report.extra, report.extra.get("internal_errors")
    fired = report.fired()
    missing = set(expected["must_fire"]) - fired
    assert not missing, f"expected {sorted(missing)} to fire; got {sorted(fired)}"
    unexpected = set(expected["must_not_fire"]) & fired
    assert not unexpected, f"{sorted(unexpected)} fired: {[f.message for f in report.findings if f.rule in unexpected]}"
    if "ok" in expected:
        errors = [f"{f.rule}: {f.message}" for f in report.findings if f.severity == "error"]
        assert report.ok is expected["ok"], errors or "expected at least one error"


def test_corpus_expectations_name_real_rules() -> None:
    from tests.check.casebuild import load_case

    known = {r.id for r in all_rules()}
    for case in case_names():
        _, expected = load_case(case)
        unknown = (set(expected["must_fire"]) | set(expected["must_not_fire"])) - known
        assert not unknown, f"{case}: {sorted(unknown)} are not rules"


# That every rule fires on some input, and not on its near miss, is tests/rules/'s, for every family.


def _strict_runs() -> list[tuple[str, str | None]]:
    """(case, engine) for every valid case and each engine it is published for: ``strict_for`` in its
    expected.json (None = no --engine), or the engine its case.json pins, or no engine, vLLM and SGLang."""
    from tests.check.casebuild import load_case

    runs: list[tuple[str, str | None]] = []
    for case in case_names():
        if not case.startswith("valid"):
            continue
        spec, expected = load_case(case)
        pinned = spec.get("check", {}).get("engine")
        engines = [pinned] if pinned else expected.get("strict_for", [None, "vllm", "sglang"])
        runs.extend((case, engine) for engine in engines)
    return runs


@pytest.mark.parametrize(("case", "engine"), _strict_runs())
def test_valid_drafter_passes_strict_for_its_engine(case: str, engine: str | None, tmp_path: Path) -> None:
    from specprobe.findings import ExitCode, exit_code

    draft_dir, kwargs, _ = build_case(case, tmp_path)
    kwargs["engine"] = engine

    report = run_check(draft_dir, **kwargs)

    loud = [f"{f.rule} ({f.severity}): {f.message}" for f in report.findings if f.severity != "info"]
    assert loud == []
    assert exit_code(report, strict=True) is ExitCode.OK


def test_valid_cases_left_out_of_an_engine_say_why() -> None:
    from tests.check.casebuild import load_case

    for case in case_names():
        expected = load_case(case)[1]
        if case.startswith("valid") and len(expected.get("strict_for", [None, "vllm", "sglang"])) < 3:
            assert expected.get("strict_note"), case
