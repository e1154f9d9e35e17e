"""The deployment model built from a launch command, and lint running the drafter checks on it."""

from __future__ import annotations

import json

import pytest

from specprobe.demo.example import write_demo
from specprobe.deploy import deployment_from_argv
from specprobe.deploy.argv import parse_command
from specprobe.findings import SpecprobeError
from specprobe.pipeline.gate import lint_command


def test_vllm_command_fields_and_lines():
    spec = json.dumps({"method": "EAGLE3", "model": "org/draft", "num_speculative_tokens": 3})
    argv = ["vllm", "serve", "org/target", "--speculative-config", spec, "--device", "cpu"]
    deployment = deployment_from_argv(argv, file="run.sh", line=4, argv_lines=[4, 4, 4, 5, 5, 6, 6])
    assert (deployment.engine_name, deployment.target, deployment.draft, deployment.method) == (
        "vllm",
        "org/target",
        "org/draft",
        "eagle3",
    )
    assert deployment.speculative["num_speculative_tokens"] == 3
    assert deployment.device == "cpu"
    assert deployment.source.line_of("draft") == 5
    assert deployment.source.line_of("device") == 6
    assert deployment.source.line_of("target") == 4


def test_sglang_command_with_prefixes():
    argv = [
        "exec", "env", "HF_HOME=/c", "python3", "-u", "-m", "sglang.launch_server",
        "--model-path", "t", "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "d",
    ]
    deployment = deployment_from_argv(argv)
    fields = (deployment.engine_name, deployment.target, deployment.draft, deployment.method)
    assert fields == ("sglang", "t", "d", "eagle3")
    assert deployment.env == {"HF_HOME": "/c"}
    assert deployment.speculative["speculative_algorithm"] == "EAGLE3"


def test_not_a_serve_command():
    with pytest.raises(SpecprobeError):
        deployment_from_argv(["python", "train.py"])
    assert parse_command(["vllm", "serve", "m"]).model == "m"


def test_lint_reports_the_drafters_checkpoint_errors(tmp_path):
    write_demo(tmp_path)
    spec = {"method": "eagle3", "model": str(tmp_path / "draft-broken"), "num_speculative_tokens": 3}
    report = lint_command(["vllm", "serve", str(tmp_path / "target"), "--speculative-config", json.dumps(spec)])
    errors = {f.rule for f in report.findings if f.severity == "error"}
    assert {"VOCAB-D2T-RANGE", "TARGET-AUX-LAYER-RANGE"} <= errors
    good = dict(spec, model=str(tmp_path / "draft"))
    assert lint_command(["vllm", "serve", str(tmp_path / "target"), "--speculative-config", json.dumps(good)]).ok


def test_lint_says_what_it_could_not_examine(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    spec = {"method": "eagle3", "model": "nobody/not-cached-draft", "num_speculative_tokens": 3}
    report = lint_command(["vllm", "serve", "nobody/not-cached-target", "--speculative-config", json.dumps(spec)])
    unexamined = [f for f in report.findings if f.rule == "DEPLOY-NOT-EXAMINED"]
    assert len(unexamined) == 2 and all(f.severity == "info" for f in unexamined)
    strict = lint_command(
        ["vllm", "serve", "nobody/not-cached-target", "--speculative-config", json.dumps(spec)], strict=True
    )
    assert {f.severity for f in strict.findings if f.rule == "DEPLOY-NOT-EXAMINED"} == {"warning"}
