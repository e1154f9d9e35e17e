"""fix over the whole check corpus (tests/cases): every case either comes out as a copy that passes
`check` for the release, or is refused with FIX-UNFIXABLE / FIX-MISSING-INFO (or a one-line usage
error), never a traceback; no code from the input runs, and nothing is written outside --out."""

from __future__ import annotations

from pathlib import Path

import pytest

from specprobe.demo.fixtures import target_config, write_json
from specprobe.findings import Severity, SpecprobeError
from specprobe.fix.run import FixOptions, run_fix
from specprobe.pipeline.check import parse_engine
from tests.check.casebuild import SENTINEL, build_case, case_names
from tests.check.test_check_corpus import folder_fingerprint

REFUSALS = {"FIX-UNFIXABLE", "FIX-MISSING-INFO"}


@pytest.mark.parametrize("case", case_names())
def test_corpus_case_is_fixed_or_refused(case: str, tmp_path: Path) -> None:
    draft, kwargs, _ = build_case(case, tmp_path / "in")
    target = kwargs.get("target")
    if target is None:
        target = str(tmp_path / "in" / "default-target")
        Path(target).mkdir()
        write_json(Path(target) / "config.json", target_config())
    engine = kwargs.get("engine") or "vllm==0.33.0"
    try:
        engines, _ = parse_engine(engine)
    except SpecprobeError:
        engines = [("vllm", "0.33.0")]
    name, version = engines[0]
    before = folder_fingerprint(tmp_path / "in")
    out = tmp_path / "out"
    try:
        report = run_fix(FixOptions(draft=draft, target=target, engine=f"{name}=={version}", out=out))
    except SpecprobeError as exc:
        assert "\n" not in str(exc) and not out.exists()
        return
    assert folder_fingerprint(tmp_path / "in") == before
    assert not (tmp_path / "in" / "sandbox" / SENTINEL).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == (["in", "out"] if out.exists() else ["in"])
    errors = {f.rule for f in report.findings if f.severity is Severity.ERROR}
    if report.ok:
        assert out.is_dir()
    else:
        assert errors <= REFUSALS, [f.message for f in report.findings if f.severity is Severity.ERROR]
        assert not out.exists()
