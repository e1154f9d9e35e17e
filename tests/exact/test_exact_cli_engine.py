"""`check --exact` end to end with the provisioned engines: SGLang 0.5.23 and vLLM 0.33.0 (its CUDA wheel,
no CPU build) each give the verdict `exact` from their own cached venv, a valid drafter has no warning, and
nothing is written into the drafter's or the target's folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.demo.fixtures import DraftSpec, build_draft, build_target
from tests.engine_interpreters import ENGINE_VERSIONS

pytestmark = pytest.mark.engine


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize(("engine", "python_fixture"), [("sglang", "sglang_python"), ("vllm", "vllm_python")])
def test_check_exact_uses_the_release_venv(
    engine: str, python_fixture: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    python: Path = request.getfixturevalue(python_fixture)
    version = ENGINE_VERSIONS[engine]
    # SpecForge's layout (eagle_config ids) reads the same in both engines.
    draft = build_draft(tmp_path / "draft", DraftSpec(hidden_size=256, num_attention_heads=4, num_key_value_heads=2,
                                                      intermediate_size=512, draft_format="specforge"))
    target = build_target(tmp_path / "target", hidden_size=256, vocab_size=512, num_hidden_layers=8)
    before = _tree(tmp_path)
    result = CliRunner().invoke(app, ["check", str(draft), "--target", str(target), "--engine",
                                      f"{engine}=={version}", "--exact", "--format", "json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (entry,) = report["exact"]
    assert entry["verdict"] == "exact" and entry["reported"] == version
    assert Path(entry["interpreter"]).parent.parent.name == python.parent.parent.name  # e.g. vllm-0.33.0
    loud = [f"{f['rule']}: {f['message']}" for f in report["findings"] if f["severity"] != "info"]
    assert loud == []
    assert any(f["rule"] == "EXACT-RESOLVED" for f in report["findings"])
    assert _tree(tmp_path) == before
