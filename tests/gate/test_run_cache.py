"""What a gate run shares between its deployments, and what it does not share between runs: the
matrix, the schema snapshot, the target's classification and each drafter's check are read once per
run (so cost grows with distinct inputs, not with replicas), from a cache object the run owns."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

import specprobe.compat.subjects
import specprobe.pipeline.check
import specprobe.pipeline.gate
import specprobe.pipeline.lint
import specprobe.schema.store
from specprobe.pipeline.gate import gate_paths
from tests.gate.fleet import write_fleet


def _fleet(tmp_path: Path, demo: Path, count: int, *, distinct: bool) -> Path:
    drafts = []
    for index in range(count):
        if distinct:
            folder = tmp_path / f"draft-{index}"
            shutil.copytree(demo / "draft", folder)
            drafts.append(str(folder))
        else:
            drafts.append(str(demo / "draft"))
    return write_fleet(tmp_path / "fleet.yaml", demo / "target", drafts)


@pytest.fixture
def calls(monkeypatch) -> Counter[str]:
    counted: Counter[str] = Counter()

    def count(module: object, name: str) -> None:
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            counted[name] += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, wrapper)

    count(specprobe.pipeline.lint, "load_matrix")
    count(specprobe.schema.store, "load_snapshot")
    count(specprobe.pipeline.gate, "build_context")
    count(specprobe.pipeline.gate, "classify_target")
    count(specprobe.pipeline.gate, "classify_draft")
    return counted


@pytest.mark.parametrize("distinct", [False, True], ids=["replicas", "distinct-drafters"])
def test_shared_inputs_are_read_once_per_run(distinct: bool, demo: Path, tmp_path: Path, calls) -> None:
    counts: dict[int, Counter[str]] = {}
    # The first run in a process also fills process-wide caches of rule families: compare later ones.
    for count in (1, 3, 12):
        calls.clear()
        folder = tmp_path / f"fleet-{count}"
        folder.mkdir()
        report = gate_paths([str(_fleet(folder, demo, count, distinct=distinct))])
        assert len(report.sections or []) == count
        counts[count] = Counter(calls)
        assert calls["load_matrix"] == 1
        drafters = count if distinct else 1
        assert calls["build_context"] == drafters
        # check's reading of the drafter and of the target serves the matrix too.
        assert calls["classify_draft"] == 0
        assert calls["classify_target"] == 0
    # Snapshots are read per engine version (and per rule family that needs one), not per deployment.
    assert counts[12]["load_snapshot"] == counts[3]["load_snapshot"]


def test_two_runs_share_nothing(demo: Path, tmp_path: Path, calls) -> None:
    manifest = _fleet(tmp_path, demo, 2, distinct=False)
    gate_paths([str(manifest)])
    gate_paths([str(manifest)])
    # A drafter may change between two runs in one process: each run checks it again.
    assert calls["build_context"] == 2
    assert not hasattr(specprobe.pipeline.gate, "_CHECKS")
