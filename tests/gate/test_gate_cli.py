"""`specprobe gate` end to end: good and bad deployment files of every form, both engines, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from tests.gate.conftest import line_of

runner = CliRunner()


def gate(*args: str) -> tuple[int, dict]:
    result = runner.invoke(app, ["gate", *args, "--format", "json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def by_rule(report: dict, rule: str) -> list[dict]:
    return [f for f in report["findings"] if f["rule"] == rule]


def k8s(demo: Path, draft: str, image: str = "vllm/vllm-openai:v0.33.0") -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: llm
        spec:
          template:
            spec:
              containers:
                - name: vllm
                  image: {image}
                  args:
                    - {demo / "target"}
                    - --speculative-config
                    - '{{"method": "eagle3", "model": "{demo / draft}", "num_speculative_tokens": 3}}'
        """
    )


def test_good_kubernetes_passes(tmp_path, demo):
    path = tmp_path / "good.yaml"
    path.write_text(k8s(demo, "draft"), encoding="utf-8")
    code, report = gate(str(path))
    assert code == 0 and report["ok"]
    (version,) = by_rule(report, "DEPLOY-ENGINE-VERSION")
    assert "vllm==0.33.0 (from the image tag" in version["message"]
    assert report["deployments"][0]["version_source"] == "image tag"


def test_bad_kubernetes_fails_at_the_draft_line(tmp_path, demo):
    text = k8s(demo, "draft-broken")
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    code, report = gate(str(path))
    assert code == 1
    (d2t,) = by_rule(report, "VOCAB-D2T-RANGE")
    assert d2t["file"] == str(path) and d2t["line"] == line_of(text, '"method": "eagle3"')
    assert d2t["deployment"] == "k8s/Deployment/llm/container/vllm"
    assert d2t["location"].startswith(str(demo / "draft-broken"))
    # Every finding of a deployment file is located.
    assert all(f.get("file") == str(path) and isinstance(f.get("line"), int) for f in report["findings"])


def test_relative_paths_resolve_from_the_files_folder(tmp_path, demo):
    folder = demo / "deploy"
    folder.mkdir(exist_ok=True)
    manifest = folder / "manifest.yaml"
    manifest.write_text(
        "deployments:\n"
        "  - name: good\n    engine: vllm==0.33.0\n    target: ../target\n    draft: ../draft\n    method: eagle3\n"
        "  - name: broken\n    engine: sglang==0.5.23\n    target: ../target\n    draft: ../draft-broken\n"
        "    method: eagle3\n",
        encoding="utf-8",
    )
    code, report = gate(str(manifest))
    assert code == 1
    sections = {f["deployment"] for f in report["findings"] if f["severity"] == "error"}
    assert sections == {"manifest/broken"}
    assert [d["version_source"] for d in report["deployments"]] == ["manifest", "manifest"]


def test_compose_and_script_for_both_engines(tmp_path, demo):
    compose = tmp_path / "compose.yaml"
    compose.write_text(
        textwrap.dedent(
            f"""\
            services:
              sgl:
                image: lmsysorg/sglang:v0.5.23-cu129
                command: >
                  python3 -m sglang.launch_server --model-path {demo / "target"}
                  --speculative-algorithm EAGLE3 --speculative-draft-model-path {demo / "draft"}
                  --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4
            """
        ),
        encoding="utf-8",
    )
    script = tmp_path / "serve.sh"
    script_text = (
        f"#!/bin/sh\nvllm serve {demo / 'target'} \\\n"
        f"  --speculative-config '{{\"method\": \"eagle\", \"model\": \"{demo / 'draft'}\"}}' \\\n"
        "  --speculative-model x\n"
    )
    script.write_text(script_text, encoding="utf-8")
    code, report = gate(str(compose), str(script))
    assert code == 1
    assert {d["name"] for d in report["deployments"]} == {"compose/service/sgl", "script/serve.sh"}
    (unknown,) = by_rule(report, "LINT-UNKNOWN-FLAG")
    assert unknown["file"] == str(script) and unknown["line"] == line_of(script_text, "--speculative-model x")
    assert all(f["deployment"] == "script/serve.sh" for f in report["findings"] if f["severity"] == "error")
    assert report["subject"]["deployments"] == "2"


def test_launch_command_after_double_dash(demo):
    result = runner.invoke(
        app,
        ["gate", "--format", "json", "--", "vllm", "serve", str(demo / "target"), "--speculative-config",
         json.dumps({"method": "eagle3", "model": str(demo / "draft-broken"), "num_speculative_tokens": 3})],
    )
    assert result.exit_code == 1
    assert {"VOCAB-D2T-RANGE", "TARGET-AUX-LAYER-RANGE"} <= {f["rule"] for f in json.loads(result.stdout)["findings"]}


def test_unexamined_hub_ids_pass_but_fail_under_strict(tmp_path):
    path = tmp_path / "hub.yaml"
    path.write_text(k8s(Path("nobody"), "not-cached").replace("nobody/target", "nobody/target-model"), "utf-8")
    code, report = gate(str(path))
    assert code == 0
    notes = by_rule(report, "DEPLOY-NOT-EXAMINED")
    assert {n["severity"] for n in notes} == {"info"} and len(notes) == 2
    assert runner.invoke(app, ["gate", str(path), "--strict"]).exit_code == 1
    assert runner.invoke(app, ["gate", str(path), "--fail-on", "warning"]).exit_code == 0


def test_engine_option_and_its_precedence(tmp_path, demo):
    path = tmp_path / "serve.yaml"
    path.write_text(f"model: {demo / 'target'}\nspeculative_config:\n  method: medusa\n  model: {demo / 'draft'}\n")
    _, report = gate(str(path), "--engine", "vllm==0.16.0")
    assert report["deployments"][0]["engine"] == "vllm==0.16.0"
    assert report["deployments"][0]["version_source"] == "--engine"
    code_new, report_new = gate(str(path))
    assert report_new["deployments"][0]["version_source"] == "newest snapshot"
    assert code_new == 1 and by_rule(report_new, "LINT-METHOD")  # medusa is gone from recent vLLM


@pytest.mark.parametrize(
    ("name", "text", "expected", "code"),
    [
        ("bad.yaml", "kind: Pod\napiVersion: v1\nspec: {containers: [\n", "bad.yaml:4: not valid YAML", 1),
        ("bad.toml", "deployments = [\n", "bad.toml: not valid TOML", 1),
        ("other.yaml", "hello: world\n", "not a Kubernetes manifest", 0),
        ("patch.yaml", "- op: replace\n  path: /spec/replicas\n  value: 3\n", "not a Kubernetes manifest", 0),
    ],
)
def test_a_broken_file_is_a_finding_for_that_file_and_the_run_goes_on(tmp_path, demo, name, text, expected, code):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    good = tmp_path / "good.yaml"
    good.write_text(k8s(demo, "draft"), encoding="utf-8")
    exit_code, report = gate(str(path), str(good))
    assert exit_code == code and len(report["deployments"]) == 1
    (about,) = [f for f in report["findings"] if f.get("file") == str(path)]
    assert expected in about["message"] and about["severity"] == ("error" if code else "info")
    assert runner.invoke(app, ["gate", str(tmp_path / "missing.yaml")]).exit_code == 2
    assert runner.invoke(app, ["gate", str(path), "--engine", "tgi"]).exit_code == 2


@pytest.mark.parametrize("stdin", ["", "\n", "# helm rendered nothing\n---\n"])
def test_empty_input_is_exit_2_no_input(tmp_path, stdin):
    result = runner.invoke(app, ["gate", "-"], input=stdin)
    assert result.exit_code == 2 and result.stderr.strip().splitlines() == ["specprobe: error: no input"]
    empty = tmp_path / "empty.yaml"
    empty.write_text(stdin)
    result = runner.invoke(app, ["gate", str(empty), "--strict"])
    assert result.exit_code == 2 and result.stderr.strip().endswith("no input")


def test_stdin_filename_names_stdin_and_tells_its_form():
    script = "#!/bin/bash\nARGS=(vllm serve meta-llama/Llama-3.1-8B-Instruct)\n\"${ARGS[@]}\" --port 8000\n"
    result = runner.invoke(app, ["gate", "-", "--stdin-filename", "deploy/serve.sh", "--format", "json"], input=script)
    report = json.loads(result.stdout)
    (deployment,) = report["deployments"]
    assert deployment["file"] == "deploy/serve.sh" and deployment["line"] == 2  # where the array names vllm
    dockerfile = 'FROM vllm/vllm-openai:v0.16.0\nCMD ["meta-llama/Llama-3.1-8B-Instruct"]\n'
    result = runner.invoke(app, ["gate", "-", "--stdin-filename", "Dockerfile", "--format", "json"], input=dockerfile)
    (deployment,) = json.loads(result.stdout)["deployments"]
    assert deployment["name"] == "dockerfile/Dockerfile" and deployment["engine"] == "vllm==0.16.0"


def test_gate_imports_no_torch_or_engine(tmp_path, demo):
    path = tmp_path / "good.yaml"
    path.write_text(k8s(demo, "draft"), encoding="utf-8")
    probe = (
        "import sys\nfrom specprobe.cli import main\nsys.argv = ['specprobe', 'gate', sys.argv[1]]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\n"
        "heavy = sorted(m for m in ('torch', 'transformers', 'vllm', 'sglang') if m in sys.modules)\n"
        "sys.stderr.write(f'HEAVY={heavy} CODE={code}\\n')\n"
    )
    result = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, check=False)
    assert "HEAVY=[] CODE=0" in result.stderr, result.stderr


def test_smoke_says_what_it_could_not_measure(tmp_path, demo):
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    manifest = tmp_path / "m.yaml"
    text = (
        "deployments:\n"
        f"  - name: served\n    engine: vllm==0.33.0\n    target: {demo / 'target'}\n    draft: {demo / 'draft'}\n"
        f"    method: eagle3\n    url: http://127.0.0.1:{port}\n"
        f"  - name: nothing\n    engine: sglang==0.5.23\n    target: {demo / 'target'}\n"
    )
    manifest.write_text(text, encoding="utf-8")
    code, report = gate(str(manifest), "--smoke")
    notes = {f["deployment"]: f for f in by_rule(report, "DEPLOY-NOT-EXAMINED")}
    assert "smoke could not run" in notes["manifest/served"]["message"]
    assert notes["manifest/served"]["line"] == line_of(text, "url: http")
    assert "needs a server url" in notes["manifest/nothing"]["message"]
    assert code == 0
    assert runner.invoke(app, ["gate", str(manifest), "--smoke", "--strict"]).exit_code == 1


def test_rendered_manifest_on_stdin(demo):
    text = k8s(demo, "draft-broken")
    result = runner.invoke(app, ["gate", "-", "--format", "json"], input=text)
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    (d2t,) = by_rule(report, "VOCAB-D2T-RANGE")
    assert d2t["file"] == "<stdin>" and d2t["line"] == line_of(text, '"method": "eagle3"')
