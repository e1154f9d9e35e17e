"""Runner of the fixtures of `smoke --hidden-states` and of its comparison with a served engine.

Kind ``hidden-states``: ``"dump"`` builds a small random drafter (tests/smoke/dump_writer.py) and a SpecForge
dump for it (``"samples"``, ``"width"``: the aux row width, ``"corrupt"``: ``truncate`` / ``nan`` /
``empty`` / ``ge-data``) and runs `specprobe smoke --hidden-states` on them; ``"gap"`` puts an engine's
recorded figures (``"engine"``) beside a dump's (``"data"``), as `smoke --serve --hidden-states` does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from specprobe.findings import Measurement
from specprobe.smoke.offline_gap import attach_offline

Runner = Callable[[dict[str, Any], Path, Path], set[str]]


def _dump_case(spec: dict[str, Any], tmp_path: Path) -> set[str]:
    from specprobe.smoke.offline import OfflineOptions, run_offline
    from tests.smoke.dump_writer import AUX, HIDDEN, sample_path, save_record, synthetic_record, tiny_drafter

    draft = tiny_drafter(tmp_path / "draft")
    dump = tmp_path / "dump"
    width = int(spec.get("width", HIDDEN * len(AUX)))
    for index in range(int(spec.get("samples", 2))):
        record = synthetic_record(seed=index, width=width)
        if spec.get("corrupt") == "nan" and index == 0:
            record["aux_hidden_state"][0, 3, 1] = float("nan")
        if spec.get("corrupt") == "ge-data":
            del record["aux_hidden_state"]
        save_record(record, sample_path(dump, index))
    first = sample_path(dump, 0)
    if spec.get("corrupt") == "truncate":
        first.write_bytes(first.read_bytes()[:100])
    if spec.get("corrupt") == "empty":
        first.write_bytes(b"")
    report = run_offline(OfflineOptions(draft=draft, hidden_states=dump, progress=False))
    return report.fired()


def run_hidden_states_case(case: dict[str, Any], folder: Path, tmp_path: Path) -> set[str]:
    if "gap" in case:
        gap = case["gap"]
        finding = attach_offline(Measurement.from_figures(gap["engine"]), Measurement.from_figures(gap["data"]),
                                 int(gap.get("k", 3)))
        return set() if finding is None else {finding.rule}
    return _dump_case(case["dump"], tmp_path)


RUNNERS: dict[str, Runner] = {"hidden-states": run_hidden_states_case}
