"""Rule-level behaviour that the corpus cannot show: engine gating from a schema, severities without
--engine, argument errors, rule metadata."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from specprobe.demo.fixtures import DraftSpec, build_draft, build_target
from specprobe.findings import ExitCode, Finding, Severity, SpecprobeError, exit_code
from specprobe.pipeline.check import latest_version, parse_engine, run_check
from specprobe.rules import target as target_rules
from specprobe.rules.catalog import all_rules
from specprobe.schema.model import EngineSchema


def test_eagle3_target_gating_from_an_engine_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_draft(tmp_path / "draft", DraftSpec())
    build_target(tmp_path / "target", model_type="kimi_k2")
    gated = EngineSchema(engine="vllm", version="0.16.0", eagle3_target_supported=["llama", "qwen", "gpt_oss"])
    monkeypatch.setattr(target_rules, "_schema", lambda engine, version: gated)

    report = run_check(tmp_path / "draft", target=str(tmp_path / "target"), engine="vllm==0.16.0")

    findings = [f for f in report.findings if f.rule == "TARGET-EAGLE3-UNSUPPORTED"]
    assert len(findings) == 1 and findings[0].severity == "error"
    assert "kimi_k2" in findings[0].message


def _unresolved(report: object) -> list[str]:
    return [f.severity for f in report.findings if f.rule == "LAYOUT-ARCH-UNRESOLVED"]  # type: ignore[attr-defined]


def test_a_target_class_as_drafter_is_an_error_and_an_unknown_class_a_warning(tmp_path: Path) -> None:
    # GemmaForCausalLM is a target class both engines register: each loads (or looks for) the wrong model.
    build_draft(tmp_path / "known", DraftSpec(), config_overrides={"architectures": ["GemmaForCausalLM"]})
    build_draft(tmp_path / "unknown", DraftSpec(), config_overrides={"architectures": ["AcmeDraftForCausalLM"]})
    remote = {"architectures": ["AcmeDraftForCausalLM"], "auto_map": {"AutoModelForCausalLM": "acme.AcmeDraft"}}
    build_draft(tmp_path / "remote", DraftSpec(), config_overrides=remote)

    assert _unresolved(run_check(tmp_path / "known")) == ["error", "error"]
    assert _unresolved(run_check(tmp_path / "known", engine="sglang")) == ["error"]
    # SGLang >= 0.5.17 refuses a class its own registry lacks ("Cannot find model module") ...
    assert _unresolved(run_check(tmp_path / "unknown", engine="sglang")) == ["error"]
    # ... an auto_map without the exact key AutoModel included (SGLang looks up auto_map["AutoModel"]) ...
    assert _unresolved(run_check(tmp_path / "remote", engine="sglang")) == ["error"]
    # ... unless remote code could supply it, or no fact covers the release.
    automodel = {"architectures": ["AcmeDraftForCausalLM"], "auto_map": {"AutoModel": "acme.AcmeDraft"}}
    build_draft(tmp_path / "automodel", DraftSpec(), config_overrides=automodel)
    assert _unresolved(run_check(tmp_path / "automodel", engine="sglang")) == ["warning"]
    assert _unresolved(run_check(tmp_path / "unknown", engine="sglang==0.5.16")) == ["warning"]
    # vLLM rewrites it to Eagle3AcmeDraftForCausalLM: no transformers class, no auto_map, not in the
    # release's registry -> refused at start, an error wherever that registry is known ...
    assert _unresolved(run_check(tmp_path / "unknown", engine="vllm")) == ["error"]
    assert _unresolved(run_check(tmp_path / "unknown", engine="vllm==0.40.0")) == ["error"]
    # ... a warning where remote code could supply it, or the release's registry is not known.
    assert _unresolved(run_check(tmp_path / "remote", engine="vllm")) == ["warning"]
    assert _unresolved(run_check(tmp_path / "unknown", engine="vllm==0.7.3")) == ["warning"]


def test_a_drafter_one_engine_loads_is_only_information_for_the_other(tmp_path: Path) -> None:
    # Original EAGLE-3 config: vLLM rewrites LlamaForCausalLM to Eagle3LlamaForCausalLM; SGLang does not.
    build_draft(tmp_path / "d", DraftSpec(draft_format="eagle3"))

    assert _unresolved(run_check(tmp_path / "d")) == ["info"]
    assert _unresolved(run_check(tmp_path / "d", engine="vllm")) == []
    assert _unresolved(run_check(tmp_path / "d", engine="sglang")) == ["error"]


def test_speculators_drafter_resolves_on_vllm_without_warnings_there(tmp_path: Path) -> None:
    build_draft(tmp_path / "d", DraftSpec(draft_format="speculators"))

    report = run_check(tmp_path / "d", engine="vllm")

    assert report.ok
    assert "LAYOUT-ARCH-UNRESOLVED" not in report.fired()
    assert report.subject["engine"] == f"vllm=={latest_version('vllm')}"


@pytest.mark.parametrize("spec", ["tensorrt", "vllm==not.a.version", "=="])
def test_bad_engine_argument_cannot_run(spec: str) -> None:
    with pytest.raises(SpecprobeError):
        parse_engine(spec)


def test_engine_argument_forms() -> None:
    assert parse_engine("vllm==0.16.0") == ([("vllm", "0.16.0")], True)
    assert parse_engine("SGLang") == ([("sglang", latest_version("sglang"))], True)
    engines, explicit = parse_engine(None)
    assert [e for e, _ in engines] == ["vllm", "sglang"] and not explicit


def test_missing_draft_folder_cannot_run(tmp_path: Path) -> None:
    with pytest.raises(SpecprobeError, match="does not exist"):
        run_check(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(SpecprobeError, match="not a folder"):
        run_check(tmp_path / "file")


def test_a_crashing_family_is_an_internal_error_finding_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    build_draft(tmp_path / "d", DraftSpec())

    def broken_family(ctx: object) -> list[object]:
        raise RuntimeError("rule bug")

    def fine_family(ctx: object) -> list[Finding]:
        return [Finding(rule="LAYOUT-FORMAT", severity=Severity.INFO, message="still ran")]

    report = run_check(tmp_path / "d", families=[broken_family, fine_family])

    assert [f.rule for f in report.findings] == ["INTERNAL-ERROR", "LAYOUT-FORMAT"]
    assert report.findings[0].severity is Severity.ERROR
    assert report.findings[0].message == f"internal error in {__name__}: RuntimeError: rule bug"
    assert report.extra["internal_errors"] == [report.findings[0].message]
    assert exit_code(report) is ExitCode.CANNOT_RUN
    assert exit_code(report, strict=True) is ExitCode.CANNOT_RUN
    assert capsys.readouterr().err.count("\n") == 1


def test_a_family_raising_half_way_leaves_no_partial_findings(tmp_path: Path) -> None:
    build_draft(tmp_path / "d", DraftSpec())

    def half_family(ctx: object) -> Iterator[Finding]:
        yield Finding(rule="LAYOUT-FORMAT", severity=Severity.INFO, message="first")
        raise ValueError("then a bug")

    report = run_check(tmp_path / "d", families=[half_family])

    assert [f.rule for f in report.findings] == ["INTERNAL-ERROR"]


def test_check_cli_exits_2_on_an_internal_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import specprobe.pipeline.check as check_module
    from specprobe.cli import app

    build_draft(tmp_path / "d", DraftSpec())

    def broken_family(ctx: object) -> list[object]:
        raise RuntimeError("rule bug")

    monkeypatch.setattr(check_module, "_families", lambda: [broken_family])
    result = CliRunner().invoke(app, ["check", str(tmp_path / "d"), "--format", "json"])
    assert result.exit_code == 2, result.output
    assert '"INTERNAL-ERROR"' in result.output


def test_check_rules_carry_description_severity_and_evidence() -> None:
    families = {"files", "safety", "layout", "shapes", "vocab", "target", "deep"}
    rules = [r for r in all_rules() if r.family in families]
    assert len(rules) >= 40
    for r in rules:
        assert r.id.startswith(r.family.upper() + "-"), r.id
        assert r.description and "\n" not in r.description
        assert all(url.startswith("https://") for url in r.evidence) and r.evidence


@pytest.mark.parametrize(
    "ids",
    ["2,16,29", [-1, 3, 5], [[1], [3], [5]], [True, 3, 5], [3, 3, 5], [1.5, 3, 5], {"a": 1}, [None, 3, 5]],
)
def test_malformed_aux_ids_are_named_not_reported_missing(tmp_path: Path, ids: object) -> None:
    build_draft(tmp_path / "d", DraftSpec(), config_overrides={"eagle_aux_hidden_state_layer_ids": ids})
    build_target(tmp_path / "t")

    report = run_check(tmp_path / "d", target=str(tmp_path / "t"))

    [finding] = [f for f in report.findings if f.rule == "SHAPES-AUX-IDS-INVALID"]
    assert finding.severity == "error" and "eagle_aux_hidden_state_layer_ids" in finding.message
    assert len(finding.message) < 300
    assert "TARGET-AUX-IDS-MISSING" not in report.fired()
    assert "internal_errors" not in report.extra


@pytest.mark.parametrize(
    ("method", "engine", "fires"),
    [
        ("dflash", "vllm==0.16.0", True),
        ("dflash", "vllm==0.33.0", False),
        ("bogus", "sglang", True),
        ("eagle3", "vllm==0.16.0", False),
    ],
)
def test_check_names_a_method_the_release_does_not_have(tmp_path: Path, method: str, engine: str, fires: bool) -> None:
    build_draft(tmp_path / "d", DraftSpec())

    report = run_check(tmp_path / "d", method=method, engine=engine)

    assert ("COMPAT-METHOD-UNAVAILABLE" in report.fired()) is fires


def test_max_position_follows_each_engine_version(tmp_path: Path) -> None:
    build_draft(tmp_path / "short", DraftSpec(max_position_embeddings=2048))
    # SGLang multiplies by a rope factor that names no original length: 32768 x 4 covers the target.
    build_draft(
        tmp_path / "scaled",
        DraftSpec(max_position_embeddings=32768),
        config_overrides={"rope_scaling": {"type": "yarn", "factor": 4.0}},
    )
    build_target(tmp_path / "t", max_position_embeddings=131072)

    def severities(draft: str, engine: str) -> list[str]:
        report = run_check(tmp_path / draft, target=str(tmp_path / "t"), engine=engine)
        return [f.severity for f in report.findings if f.rule == "TARGET-MAX-POSITION"]

    assert severities("short", "vllm==0.24.0") == ["warning"]  # #48894, fixed by #49343 in 0.27.0
    assert severities("short", "vllm==0.27.0") == []
    # SGLang's default launch refuses to start (after the target has loaded) without the env switch or a
    # --context-length at most the draft's: a warning naming them; lint/gate decide from the command.
    assert severities("short", "sglang==0.5.23") == ["warning"]
    assert severities("scaled", "sglang==0.5.23") == []
    assert severities("scaled", "vllm==0.24.0") == ["warning"]


def test_a_full_vocabulary_drafter_without_lm_head_is_fine_only_where_the_target_head_is_borrowed(
    tmp_path: Path,
) -> None:
    from specprobe.checkpoint.writer import write_safetensors
    from specprobe.demo.fixtures import draft_config, draft_tensors, write_json

    spec = DraftSpec(draft_vocab_size=512)  # the full vocabulary: no d2t/t2d
    folder = tmp_path / "d"
    folder.mkdir()
    write_json(folder / "config.json", draft_config(spec))
    tensors = draft_tensors(spec)
    del tensors["lm_head.weight"]
    write_safetensors(folder / "model.safetensors", tensors)

    def severities(engine: str | None) -> list[str]:
        return [f.severity for f in run_check(folder, engine=engine).findings if f.rule == "LAYOUT-LM-HEAD-MISSING"]

    assert severities("vllm==0.33.0") == []
    assert severities("vllm==0.11.0") == ["error"]
    assert severities("sglang==0.5.23") == ["error"]
    assert severities(None) == ["info"]
