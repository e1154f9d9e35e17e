"""Evidence per finding: a finding cites what applies to its own deployment's engine and input form,
not every link its rule carries."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.deploy import rules as deploy_rules
from specprobe.pipeline.gate import input_form, relevant_evidence
from specprobe.rules import lint as lint_rules

runner = CliRunner()


def test_a_vllm_finding_does_not_cite_sglang_and_a_script_does_not_cite_kubernetes() -> None:
    both_engines = list(lint_rules.UNKNOWN_FLAG.evidence)
    assert any("sgl-project" in url for url in both_engines)
    vllm_only = relevant_evidence(both_engines, engine="vllm", form="shell")
    assert vllm_only and not any("sgl-project" in url for url in vllm_only)
    sglang_only = relevant_evidence(both_engines, engine="sglang", form=None)
    assert sglang_only and not any("vllm-project" in url for url in sglang_only)

    forms = list(deploy_rules.NO_LAUNCH.evidence)
    assert not any("kubernetes.io" in url for url in relevant_evidence(forms, engine=None, form="shell"))
    assert any("kubernetes.io" in url for url in relevant_evidence(forms, engine=None, form="kubernetes"))


def test_links_naming_no_engine_or_form_are_kept_and_this_engines_come_first() -> None:
    general = "https://huggingface.co/docs/huggingface_hub/v0.26.0/en/guides/manage-cache"
    sglang = "https://github.com/sgl-project/sglang/releases"
    vllm = "https://github.com/vllm-project/vllm/releases"
    assert relevant_evidence([general, sglang, vllm], engine="vllm", form="shell") == [vllm, general]
    assert relevant_evidence([general, sglang, vllm], engine=None, form=None) == [general, sglang, vllm]


def test_input_form_from_the_deployment_name_or_the_file() -> None:
    assert input_form("k8s/Deployment/a/container/vllm", "a.yaml") == "kubernetes"
    assert input_form("compose/service/vllm", "compose.yaml") == "compose"
    assert input_form(None, "deploy/serve.sh") == "shell"
    assert input_form(None, "images/Dockerfile.vllm") == "dockerfile"
    assert input_form(None, "values.yaml") is None


def test_gate_on_a_vllm_script_cites_neither_sglang_nor_kubernetes(tmp_path: Path) -> None:
    script = tmp_path / "serve.sh"
    script.write_text(
        "#!/bin/sh\nvllm serve /models/target --speculative-model /models/draft --num-speculative-tokens 3\n",
        encoding="utf-8",
    )
    result = runner.invoke(app, ["gate", str(script), "--format", "json", "--engine", "vllm==0.33.0"])
    report = json.loads(result.stdout)
    assert report["findings"], result.output
    for finding in report["findings"]:
        for url in finding["evidence"]:
            assert "sgl-project" not in url, finding
            assert "kubernetes.io" not in url, finding
