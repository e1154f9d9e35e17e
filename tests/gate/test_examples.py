"""The shipped examples: every good deployment passes, every bad one fails for its stated reasons."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from specprobe.pipeline.gate import gate_paths

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
# The errors each broken example is written to show (see the comment at its top).
# The SGLang deployments (compose.yaml, manifest.toml) do not fail for the drafter's top-level aux ids:
# SGLang >= 0.5.17 reads them only from eagle_config and captures its defaults (a warning there).
BAD = {
    "compose.yaml": {"LINT-UNKNOWN-FLAG", "VOCAB-D2T-RANGE"},
    "k8s-sglang.yaml": {"LINT-SGLANG-DRAFT-PATH", "LINT-SGLANG-SPEC-STEPS"},
    "k8s-vllm.yaml": {"DEPLOY-ENTRYPOINT-DOUBLED", "VOCAB-D2T-RANGE", "TARGET-AUX-LAYER-RANGE"},
    "serve-sglang.sh": {"LINT-METHOD"},
    "serve-vllm.sh": {"LINT-SPEC-CONFIG-VALUE"},
    "manifest.toml": {"DEPLOY-MANIFEST-SCHEMA", "VOCAB-D2T-RANGE"},
    "manifest.yaml": {"LINT-METHOD", "VOCAB-D2T-RANGE", "TARGET-AUX-LAYER-RANGE"},
    "vllm-config.yaml": {"LINT-SPEC-CONFIG-KEY", "VOCAB-D2T-RANGE", "TARGET-AUX-LAYER-RANGE"},
}


@pytest.fixture(scope="module")
def copied(tmp_path_factory: pytest.TempPathFactory, demo_module: Path) -> Path:
    root = tmp_path_factory.mktemp("examples")
    for kind in ("good", "bad"):
        shutil.copytree(EXAMPLES / kind, root / kind)
    shutil.copytree(demo_module, root / "demo")
    return root


@pytest.fixture(scope="module")
def demo_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from specprobe.demo.example import write_demo

    root = tmp_path_factory.mktemp("demo")
    write_demo(root)
    return root


def test_every_form_has_a_good_and_a_bad_example():
    good = sorted(p.name for p in (EXAMPLES / "good").iterdir())
    assert good == sorted(BAD) == sorted(p.name for p in (EXAMPLES / "bad").iterdir())


@pytest.mark.parametrize("name", sorted(BAD))
def test_good_example_passes(copied, name):
    report = gate_paths([str(copied / "good" / name)])
    assert report.ok, [(f.rule, f.message) for f in report.findings if f.severity == "error"]
    assert report.sections, "every example runs at least one engine"


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_example_fails_for_its_reasons(copied, name):
    path = str(copied / "bad" / name)
    report = gate_paths([path])
    errors = [f for f in report.findings if f.severity == "error"]
    assert {f.rule for f in errors} >= BAD[name]
    assert all(f.file == path and f.line is not None and f.deployment for f in errors)
