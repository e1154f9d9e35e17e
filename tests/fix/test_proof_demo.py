"""The proof's reference-backend part (identical float32 draft logits for original and copy) and the
demo's broken drafter: the static one misses information the files do not hold; the trained one is
repaired from its own t2d and reaches the trained drafter's acceptance (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specprobe.demo.fixtures import DraftSpec
from specprobe.findings import Measurement
from specprobe.fix.run import FixOptions, run_fix
from tests.fix.builders import d2t_absolute, d2t_shuffled, make_draft, make_target, model_prefix


@pytest.mark.parametrize(
    ("fmt", "edit", "engine", "remapped"),
    [
        ("eagle3", None, "sglang==0.5.23", False),
        ("speculators", None, "sglang==0.5.23", False),
        ("vllm-native", model_prefix, "vllm==0.33.0", False),
        ("vllm-native", d2t_shuffled, "vllm==0.33.0", True),
        ("specforge", d2t_absolute, "vllm==0.33.0", False),
    ],
)
def test_reference_backend_gives_identical_draft_logits(
    tmp_path: Path, fmt: str, edit: object, engine: str, remapped: bool
) -> None:
    pytest.importorskip("torch")
    target = make_target(tmp_path / "target")
    draft = make_draft(tmp_path / "draft", DraftSpec(draft_format=fmt), edit)  # type: ignore[arg-type]
    report = run_fix(FixOptions(draft=draft, target=str(target), engine=engine, out=tmp_path / "fixed"))
    logits = report.extra["proof"]["logits"]
    if edit is d2t_absolute:
        # The original's d2t maps outside the target vocabulary: the reference backend refuses to read it.
        assert logits["compared"] is False and "original" in logits["reason"]
        return
    assert logits["compared"] is True, logits
    assert logits["max_abs_diff"] == 0.0 and logits["identical"] is True
    assert (logits["d2t_entries_changed"] > 0) is remapped


def test_static_demo_broken_drafter_names_the_missing_information(tmp_path: Path) -> None:
    from specprobe.demo.example import write_demo

    write_demo(tmp_path)
    report = run_fix(FixOptions(draft=tmp_path / "draft-broken", target=str(tmp_path / "target"),
                                engine="vllm==0.33.0", out=tmp_path / "fixed"))
    assert not report.ok and not (tmp_path / "fixed").exists()
    missing = [f.message for f in report.findings if f.rule == "FIX-MISSING-INFO"]
    # Its d2t holds absolute ids (convertible, and t2d agrees); its third aux layer does not exist in the
    # target, and which layer fc was trained on is not in the files.
    assert len(missing) == 1 and "aux-layer ids [18]" in missing[0]
    assert any(f.rule == "FIX-VOCAB-MAP" and "absolute" in f.message for f in report.findings)
    # With the trained ids restored in its config, the rest is repaired.
    config = json.loads((tmp_path / "draft-broken" / "config.json").read_text())
    config["eagle_aux_hidden_state_layer_ids"] = [1, 7, 12]
    (tmp_path / "draft-broken" / "config.json").write_text(json.dumps(config))
    again = run_fix(FixOptions(draft=tmp_path / "draft-broken", target=str(tmp_path / "target"),
                               engine="vllm==0.33.0", out=tmp_path / "fixed"))
    assert again.ok, [f.message for f in again.findings if f.severity == "error"]


@pytest.mark.slow
def test_trained_demo_broken_drafter_reaches_the_trained_acceptance(
    tmp_path: Path, demo_models: dict[str, Path]
) -> None:
    """The demo's trained draft/ and draft-broken/ (shuffled d2t, t2d intact; the session's demo_models):
    fix rebuilds d2t from t2d and the reference smoke run of the copy equals the trained drafter's, token
    for token."""
    from specprobe.demo.example import DEMO_K
    from specprobe.smoke.runner import SmokeOptions, run_reference

    target = demo_models["target"]
    report = run_fix(FixOptions(draft=demo_models["draft-broken"], target=str(target), engine="vllm==0.33.0",
                                out=tmp_path / "fixed"))
    assert report.ok, [f.message for f in report.findings if f.severity == "error"]
    assert report.extra["proof"]["logits"]["identical"] is True

    def smoke(draft: Path, force: bool = False) -> Measurement:
        result = run_reference(SmokeOptions(target=str(target), draft=draft, num_speculative_tokens=DEMO_K,
                                            max_prompts=8, max_new_tokens=32, force=force, progress=False))
        assert result.measurement is not None and result.measurement.mean_acceptance_length is not None
        return result.measurement

    trained = smoke(demo_models["draft"])
    broken = smoke(demo_models["draft-broken"], True)
    fixed = smoke(tmp_path / "fixed")
    print(f"mean acceptance length: trained {trained.mean_acceptance_length:.3f}, broken "
          f"{broken.mean_acceptance_length:.3f}, fixed {fixed.mean_acceptance_length:.3f}")
    assert fixed.mean_acceptance_length == trained.mean_acceptance_length
    assert fixed.acceptance_rate == trained.acceptance_rate
    assert broken.mean_acceptance_length < trained.mean_acceptance_length  # type: ignore[operator]
