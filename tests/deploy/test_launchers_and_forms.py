"""Launchers as data (data/launchers.yaml) and the deployment forms found by shape: operator resources,
Ray Serve LLM configs, SkyPilot tasks, llm-d modelservice values, vLLM recipes, rendered charts."""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

import pytest
import yaml

from specprobe.deploy.argv import detect_engine, parse_command
from specprobe.deploy.engines import image_version
from specprobe.deploy.launchers import _data, launchers, unwrap, validate
from specprobe.deploy.loader import load_deployments
from specprobe.findings import SpecprobeError


def test_the_shipped_launchers_match_their_schema():
    validate(yaml.safe_load(_data("launchers.yaml")))
    with pytest.raises(SpecprobeError):
        validate({"engines": [{"name": "x", "engine": "tgi", "program": "tgi"}], "wrappers": []})


@pytest.mark.parametrize("launcher", launchers().engines, ids=lambda entry: entry.name)
def test_every_engine_launcher_is_recognised(launcher):
    head = [launcher.program] if launcher.program else ["python3", "-m", launcher.module or ""]
    argv = [*head, *launcher.subcommand, "--model", "m", "--speculative-config", "{}"]
    detected = detect_engine(argv)
    assert detected is not None and detected[0] == launcher.engine
    assert argv[detected[1]] == "--model"


@pytest.mark.parametrize("wrapper", launchers().wrappers, ids=lambda entry: entry.name)
def test_every_wrapper_passes_the_engine_through(wrapper):
    head = [wrapper.program] if wrapper.program else ["python", "-m", wrapper.module or ""]
    middle = ["--"] if wrapper.separator else ["1"] * wrapper.positionals
    tail = ["-m", "vllm.entrypoints.openai.api_server"] if wrapper.runs_python else ["vllm", "serve"]
    argv = [*head, *wrapper.subcommand, *middle, *tail, "m"]
    words, lines = unwrap(argv, list(range(len(argv))))
    assert detect_engine(words) is not None, (wrapper.name, words)
    assert len(words) == len(lines)


def test_a_launchers_own_flags_are_not_the_engines():
    command = parse_command(
        ["python", "-m", "dynamo.vllm", "--model", "m", "--disaggregation-mode", "prefill", "--no-is-decode-worker",
         "--speculative-config", '{"method": "eagle3"}']
    )
    assert command.engine == "vllm" and command.model == "m" and command.launcher == "python -m dynamo.vllm"
    assert "--disaggregation-mode" not in command.flags and command.launcher_flags["--disaggregation-mode"] == "prefill"
    assert "--no-is-decode-worker" in command.launcher_flags
    hf = parse_command(["python", "-m", "huggingfaceserver", "--model_id=org/m", "--model_name=x", "--dtype", "bf16"])
    assert hf.engine == "vllm" and hf.model == "org/m" and hf.get("--dtype") == "bf16"


def test_an_interpreter_named_by_a_variable_runs_the_module():
    assert detect_engine(["${PYTHON}", "-m", "sglang.launch_server", "--model-path", "m"]) == ("sglang", 3, {})
    assert detect_engine(["${VENV}/bin/python3", "-m", "vllm.entrypoints.openai.api_server"]) is not None
    assert detect_engine(["$X", "-m", "http.server"]) is None and detect_engine(["$X", "vllm", "serve"]) is None
    assert detect_engine(["$(command -v python3)", "-m", "sglang.launch_server"]) is not None


def test_sglang_reads_a_unique_prefix_of_a_speculative_flag():
    command = parse_command(
        ["python3", "-m", "sglang.launch_server", "--speculative-algo", "EAGLE", "--speculative-draft", "d"]
    )
    assert command.get("--speculative-algorithm") == "EAGLE"
    assert command.has("--speculative-draft")  # ambiguous (draft-model-path, draft-model-revision...): as written
    assert not parse_command(["vllm", "serve", "m", "--speculative-con", "{}"]).has("--speculative-config")


def test_an_application_tag_is_read_as_its_value_and_the_file_is_information(tmp_path):
    deployments, (note,) = load(tmp_path, "task.yaml", "task: gpqa\nprocess_docs: !function utils.process_docs\n")
    assert deployments == [] and note.rule == "DEPLOY-NO-LAUNCH" and note.severity == "info"


def test_a_dynamo_runtime_tag_is_no_engine_version():
    assert image_version("nvcr.io/nvidia/ai-dynamo/vllm-runtime:0.6.1", "vllm") is None
    assert image_version("vllm/vllm-openai:v0.16.0", "vllm") == "0.16.0"


def load(tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_deployments(str(path))


def test_containers_are_found_by_shape_in_any_resource(tmp_path):
    deployments, _ = load(
        tmp_path,
        "cr.yaml",
        """\
        apiVersion: example.com/v1
        kind: SomethingNew
        metadata: {name: x}
        spec:
          roles:
            - engine:
                image: lmsysorg/sglang:v0.5.23
                command: [python3, -m, sglang.launch_server]
                args: [--model-path, m, --speculative-algorithm, EAGLE3, --speculative-draft-model-path, d]
            - router:
                image: example/router:1
                args: [--port, "80"]
        """,
    )
    (engine,) = deployments
    assert engine.name == "k8s/SomethingNew/x/spec.roles.0.engine" and engine.method == "eagle3"
    assert engine.source.line_of("method") == 9


def test_ray_serve_llm_config_and_rayservice(tmp_path):
    deployments, _ = load(
        tmp_path,
        "rayservice.yaml",
        """\
        apiVersion: ray.io/v1
        kind: RayService
        metadata: {name: llm}
        spec:
          serveConfigV2: |
            applications:
            - name: llm
              import_path: ray.serve.llm:build_openai_app
              args:
                llm_configs:
                  - model_loading_config: {model_id: q, model_source: Qwen/Qwen2.5-7B-Instruct}
                    engine_kwargs:
                      speculative_config: {method: ngram, num_speculative_tokens: 3, prompt_lookup_max: 4}
          rayClusterConfig:
            headGroupSpec:
              template:
                spec:
                  containers: [{name: head, image: rayproject/ray-llm:2.44.0}]
        """,
    )
    (ray,) = deployments
    assert ray.name == "ray-serve/q" and ray.target == "Qwen/Qwen2.5-7B-Instruct" and ray.method == "ngram"
    assert ray.source.line_of("speculative.num_speculative_tokens") == 13


def test_skypilot_run_script_with_envs(tmp_path):
    deployments, _ = load(
        tmp_path,
        "task.yaml",
        """\
        resources: {accelerators: "H100:1"}
        envs:
          MODEL: meta-llama/Llama-3.1-8B-Instruct
        run: |
          ARGS=(--speculative-config '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}')
          vllm serve $MODEL "${ARGS[@]}"
        """,
    )
    (sky,) = deployments
    assert sky.target == "meta-llama/Llama-3.1-8B-Instruct" and sky.method == "ngram"
    assert sky.source.line_of("speculative") == 5


def test_llmd_values_and_vllm_recipe(tmp_path):
    (decode,), _ = load(
        tmp_path,
        "values.yaml",
        """\
        modelArtifacts: {uri: "hf://Qwen/Qwen3-8B", name: q}
        decode:
          parallelism: {tensor: 2}
          containers:
          - name: vllm
            image: ghcr.io/llm-d/llm-d-cuda:v0.4.0
            modelCommand: vllmServe
            args: ["--speculative-config", '{"method": "ngram", "num_speculative_tokens": 2, "prompt_lookup_max": 3}']
        prefill: {create: false}
        """,
    )
    assert decode.target == "Qwen/Qwen3-8B" and decode.method == "ngram"
    assert decode.command is not None and decode.command.get("--tensor-parallel-size") == "2"
    recipe, _ = load(
        tmp_path,
        "model.yaml",
        """\
        meta: {slug: m}
        model: {model_id: org/m, base_args: [--max-model-len, "4096"]}
        features:
          spec_decoding: {args: [--speculative-config, '{"method": "mtp", "num_speculative_tokens": 1}']}
        opt_in_features: [spec_decoding]
        """,
    )
    assert [(d.name, d.method) for d in recipe] == [("recipe/m", None), ("recipe/m+spec_decoding", "mtp")]


def _chart(tmp_path: Path) -> Path:
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 0.1.0\n")
    (chart / "templates" / "pod.yaml").write_text("metadata: {name: {{ .Release.Name }}}\nspec: [\n")
    return chart


def test_a_chart_without_helm_is_reported_not_rendered(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    deployments, (note,) = load_deployments(str(_chart(tmp_path)))
    assert deployments == [] and note.severity == "info" and "helm not found" in note.message


def test_a_chart_is_gated_as_helm_renders_it(tmp_path, monkeypatch):
    chart = _chart(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    helm = bin_dir / "helm"
    helm.write_text(
        "#!/bin/sh\ncat <<'EOF'\napiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n"
        "  - {name: v, image: 'vllm/vllm-openai:v0.16.0', args: [m]}\nEOF\n"
    )
    helm.chmod(helm.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    (deployment,), _ = load_deployments(str(chart / "Chart.yaml"))
    assert deployment.name == "k8s/Pod/p/container/v" and deployment.file == f"{chart} (helm rendered)"
    outer = tmp_path / "repo"
    outer.mkdir()
    chart.rename(outer / "chart")
    deployments, findings = load_deployments(str(outer))  # the raw template is never read as a manifest
    assert [d.name for d in deployments] == ["k8s/Pod/p/container/v"] and not findings


def test_one_yaml_item_holding_several_flags_is_an_error(tmp_path):
    (deployment,), _ = load(
        tmp_path,
        "pod.yaml",
        """\
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          containers:
          - name: v
            image: vllm/vllm-openai:v0.16.0
            args: ["m", "--max-model-len 4096 --port 8000"]
        """,
    )
    (joined,) = [f for f in deployment.findings if f.rule == "DEPLOY-VALUE"]
    assert joined.severity == "error" and joined.line == 8 and "several flags in one word" in joined.message


def test_a_configmap_script_run_by_the_container_is_read_with_its_lines(tmp_path):
    deployments, _ = load(
        tmp_path,
        "cm-script.yaml",
        """\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: scripts}
        data:
          start.sh: |
            #!/bin/bash
            ARGS=(--speculative-config '{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 4}')
            exec vllm serve "$MODEL" "${ARGS[@]}"
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: d}
        spec:
          template:
            spec:
              containers:
              - name: vllm
                image: vllm/vllm-openai:v0.16.0
                command: ["/bin/bash", "/scripts/start.sh"]
                env: [{name: MODEL, value: org/m}]
              - name: step
                image: python:3.12
                script: |
                  python3 -m sglang.launch_server --model-path org/s --speculative-algorithm NGRAM
        """,
    )
    (vllm, step) = deployments
    assert vllm.target == "org/m" and vllm.method == "ngram" and vllm.source.line_of("speculative") == 7
    assert step.engine_name == "sglang" and step.method == "ngram" and step.source.argv_line(0) == 24


def test_a_folder_gates_every_file_and_a_broken_one_is_an_error_for_that_file(tmp_path):
    (tmp_path / "good.sh").write_text("vllm serve org/m\n")
    (tmp_path / "broken.yaml").write_text("apiVersion: v1\nkind: Pod\nspec: [\n")
    (tmp_path / "patch.yaml").write_text("- op: replace\n  path: /spec/replicas\n  value: 3\n")
    (tmp_path / "empty.yaml").write_text("# nothing\n")
    deployments, findings = load_deployments(str(tmp_path))
    assert [d.name for d in deployments] == ["script/good.sh"]
    (broken,) = findings
    assert broken.rule == "DEPLOY-VALUE" and broken.severity == "error" and broken.file.endswith("broken.yaml")
    assert broken.line == 4


def test_a_config_file_the_script_writes_from_a_heredoc_is_read_with_its_lines(tmp_path):
    (deployment,), _ = load(
        tmp_path,
        "serve.sh",
        """\
        #!/bin/bash
        DRAFT=yuhuili/EAGLE3-LLaMA3.1-Instruct-8B
        cat > /tmp/serve.yaml <<EOF
        model: meta-llama/Llama-3.1-8B-Instruct
        speculative_config:
          method: eagle3
          model: $DRAFT
          num_speculative_tokens: 3
        EOF
        vllm serve --config /tmp/serve.yaml --port 8000
        """,
    )
    assert deployment.target == "meta-llama/Llama-3.1-8B-Instruct" and deployment.method == "eagle3"
    assert deployment.draft == "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B"
    assert deployment.source.line_of("speculative.num_speculative_tokens") == 8
