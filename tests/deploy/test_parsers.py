"""Each input form parsed into deployments, with the file line of every field asserted."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from specprobe.deploy.engines import image_entrypoint, image_version, split_image
from specprobe.deploy.kubernetes import expand_references
from specprobe.deploy.loader import CannotReadError, EmptyInputError, load_deployments
from specprobe.deploy.model import VersionSource
from specprobe.deploy.shell import split_commands
from tests.deploy.conftest import line_of

K8S = textwrap.dedent(
    """\
    # Source: llm/templates/deployment.yaml
    apiVersion: apps/v1
    kind: Deployment
    metadata:
      name: vllm-eagle3
      labels: {app: vllm}
    spec:
      replicas: 2
      selector:
        matchLabels: {app: vllm}
      template:
        metadata:
          labels: {app: vllm}
        spec:
          initContainers:
            - name: wait-for-weights
              image: busybox:1.36
              command: ["sh", "-c", "until [ -f /models/ready ]; do sleep 1; done"]
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.16.0
              env:
                - name: DRAFT_DIR
                  value: /models/draft
                - name: HF_TOKEN
                  valueFrom: {secretKeyRef: {name: hf, key: token}}
              args:
                - meta-llama/Llama-3.1-8B-Instruct
                - --tensor-parallel-size
                - "1"
                - --speculative-config
                - '{"method": "eagle3", "model": "$(DRAFT_DIR)", "num_speculative_tokens": 3}'
              ports: [{containerPort: 8000}]
              resources:
                limits: {nvidia.com/gpu: 1}
            - name: metrics-sidecar
              image: prom/statsd-exporter
    ---
    apiVersion: batch/v1
    kind: CronJob
    metadata:
      name: nightly-sglang
    spec:
      schedule: "0 3 * * *"
      jobTemplate:
        spec:
          template:
            spec:
              restartPolicy: Never
              containers:
                - name: sglang
                  image: lmsysorg/sglang:v0.5.23-cu129
                  command: ["/bin/sh", "-c"]
                  args:
                    - |
                      set -e
                      python3 -m sglang.launch_server \\
                        --model-path deepseek-ai/DeepSeek-V3 \\
                        --speculative-algorithm EAGLE \\
                        --speculative-num-steps 3 \\
                        --speculative-eagle-topk 1 \\
                        --speculative-num-draft-tokens 4 \\
                        --tp 8 --trust-remote-code
    """
)


def _write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_kubernetes_deployment_and_cronjob(tmp_path):
    deployments, findings = load_deployments(_write(tmp_path, "llm.yaml", K8S))
    assert [d.name for d in deployments] == [
        "k8s/Deployment/vllm-eagle3/container/vllm",
        "k8s/CronJob/nightly-sglang/container/sglang",
    ]
    vllm, sglang = deployments
    assert vllm.argv[:3] == ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"]  # through the image's entrypoint
    assert vllm.draft == "/models/draft"  # $(DRAFT_DIR) expanded from env
    assert vllm.image == "vllm/vllm-openai:v0.16.0" and vllm.device == "cuda"
    assert vllm.source.line == line_of(K8S, "- name: vllm")
    assert vllm.source.line_of("target") == line_of(K8S, "- meta-llama/Llama-3.1-8B-Instruct")
    assert vllm.source.line_of("draft") == line_of(K8S, '"method": "eagle3"')
    assert vllm.source.line_of("image") == line_of(K8S, "vllm/vllm-openai:v0.16.0")
    assert vllm.flag_line("--tensor-parallel-size", value=False) == line_of(K8S, "- --tensor-parallel-size")
    assert (sglang.target, sglang.method, sglang.engine_name) == ("deepseek-ai/DeepSeek-V3", "eagle", "sglang")
    # A literal block scalar keeps its lines: each flag is found on its own line of the file.
    assert sglang.source.line_of("method") == line_of(K8S, "--speculative-algorithm EAGLE")
    assert sglang.flag_line("--tp", value=False) == line_of(K8S, "--tp 8")
    assert findings == []  # busybox and statsd run no engine and are no engine images


def test_kubernetes_args_repeating_the_vllm_entrypoint(tmp_path):
    text = textwrap.dedent(
        """\
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          containers:
            - name: c
              image: docker.io/vllm/vllm-openai:latest
              args: ["vllm", "serve", "m", "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}']
        """
    )
    (deployment,), _ = load_deployments(_write(tmp_path, "pod.yaml", text))
    doubled = [f for f in deployment.findings if f.rule == "DEPLOY-ENTRYPOINT-DOUBLED"]
    assert len(doubled) == 1 and doubled[0].line == line_of(text, "args:")
    assert deployment.method == "ngram" and deployment.image == "docker.io/vllm/vllm-openai:latest"


def test_kubernetes_list_and_statefulset_args_as_string_is_a_finding(tmp_path):
    text = textwrap.dedent(
        """\
        apiVersion: v1
        kind: List
        items:
          - apiVersion: apps/v1
            kind: StatefulSet
            metadata: {name: s}
            spec:
              template:
                spec:
                  containers:
                    - name: llm
                      image: vllm/vllm-openai:v0.33.0
                      command: vllm serve m
        """
    )
    deployments, findings = load_deployments(_write(tmp_path, "list.yaml", text))
    assert deployments == []
    assert [f.rule for f in findings] == ["DEPLOY-VALUE", "DEPLOY-NO-LAUNCH"]
    assert findings[0].line == line_of(text, "command: vllm serve m")
    assert findings[0].deployment == "k8s/StatefulSet/s/container/llm"


def test_expand_references_like_the_kubelet():
    env = {"A": "x", "B": "y"}
    assert expand_references("$(A)-$(B)-$(C)-$$(A)", env) == "x-y-$(C)-$(A)"


COMPOSE = textwrap.dedent(
    """\
    x-gpu: &gpu
      deploy:
        resources:
          reservations:
            devices: [{driver: nvidia, count: 1, capabilities: [gpu]}]
    services:
      llm:
        <<: *gpu
        image: vllm/vllm-openai:${VLLM_TAG:-v0.33.0}
        environment:
          HF_HUB_OFFLINE: "1"
        command: >-
          Qwen/Qwen3-8B
          --speculative-config '{"method": "eagle3", "model": "${DRAFT:-/models/draft}", "num_speculative_tokens": 3}'
      sgl:
        image: lmsysorg/sglang:v0.5.23
        entrypoint: ["python3", "-m", "sglang.launch_server"]
        command:
          - --model-path
          - Qwen/Qwen3-8B
          - --speculative-algorithm
          - EAGLE3
          - --speculative-draft-model-path
          - ${SGL_DRAFT}
      web:
        image: nginx
    """
)


def test_compose_services(tmp_path):
    (tmp_path / ".env").write_text("SGL_DRAFT=/models/sgl-draft\n", encoding="utf-8")
    deployments, findings = load_deployments(_write(tmp_path, "compose.yaml", COMPOSE))
    llm, sgl = deployments
    fields = (llm.name, llm.target, llm.draft, llm.device)
    assert fields == ("compose/service/llm", "Qwen/Qwen3-8B", "/models/draft", "cuda")
    assert llm.image == "vllm/vllm-openai:v0.33.0"
    assert llm.source.line_of("draft") == line_of(COMPOSE, "command: >-")
    assert (sgl.name, sgl.draft, sgl.method) == ("compose/service/sgl", "/models/sgl-draft", "eagle3")
    assert sgl.source.line_of("draft") == line_of(COMPOSE, "- ${SGL_DRAFT}")
    assert sgl.source.line_of("method") == line_of(COMPOSE, "- EAGLE3")
    assert findings == []


SCRIPT = textwrap.dedent(
    """\
    #!/usr/bin/env bash
    set -euo pipefail
    MODEL=/models/llama-3.1-8b   # mounted by the job
    export DRAFT=${DRAFT_DIR:-/models/eagle3}

    if [ "${1:-}" = "--dry" ]; then echo dry; exit 0; fi
    CUDA_VISIBLE_DEVICES=0 exec vllm serve "$MODEL" \\
        --port 8000 \\
        --speculative-config '{"method": "eagle3",
                               "model": "'"$DRAFT"'", "num_speculative_tokens": 4}' \\
        2>&1 | tee /var/log/vllm.log
    python3 -m sglang.launch_server --model-path "$MODEL" --speculative-algorithm NGRAM && echo started
    docker run --rm --gpus all -e HF_HUB_OFFLINE=1 -v /m:/m vllm/vllm-openai:v0.16.0 --model /m/t
    """
)


def test_shell_script(tmp_path):
    deployments, findings = load_deployments(_write(tmp_path, "serve.sh", SCRIPT))
    vllm, sglang, docker = deployments
    assert [d.name for d in deployments] == ["script/serve.sh", "script/serve.sh#2", "script/serve.sh#3"]
    assert (vllm.target, vllm.draft, vllm.method) == ("/models/llama-3.1-8b", "/models/eagle3", "eagle3")
    assert vllm.env == {"CUDA_VISIBLE_DEVICES": "0", "MODEL": "/models/llama-3.1-8b", "DRAFT": "/models/eagle3"}
    assert vllm.source.line == line_of(SCRIPT, "exec vllm serve")
    assert vllm.flag_line("--port", value=False) == line_of(SCRIPT, "--port 8000")
    assert vllm.source.line_of("draft") == line_of(SCRIPT, '--speculative-config')
    assert vllm.speculative["num_speculative_tokens"] == 4
    assert (sglang.engine_name, sglang.method) == ("sglang", "ngram")
    assert sglang.source.line == line_of(SCRIPT, "sglang.launch_server")
    assert docker.image == "vllm/vllm-openai:v0.16.0" and docker.target == "/m/t"
    assert docker.env.get("HF_HUB_OFFLINE") == "1"
    assert findings == []


def test_shell_unknown_variables_stay_and_are_reported(tmp_path):
    text = 'vllm serve "$1" --speculative-config "{\\"method\\": \\"eagle3\\", \\"model\\": \\"$DRAFT\\"}"\n'
    (deployment,), _ = load_deployments(_write(tmp_path, "run.sh", text))
    assert deployment.target == "$1" and deployment.draft == "$DRAFT"


VLLM_CONFIG = textwrap.dedent(
    """\
    # vllm serve --config serve.yaml
    model: meta-llama/Llama-3.1-8B-Instruct
    tensor_parallel_size: 2
    enable_prefix_caching: true
    speculative_config:
      method: eagle3
      model: ./draft
      num_speculative_tokens: 3
    """
)


def test_vllm_config_file(tmp_path):
    (deployment,), findings = load_deployments(_write(tmp_path, "serve.yaml", VLLM_CONFIG))
    assert deployment.engine_name == "vllm" and deployment.target == "meta-llama/Llama-3.1-8B-Instruct"
    assert deployment.draft == "./draft" and deployment.resolve_path(deployment.draft) == tmp_path / "draft"
    assert deployment.command is not None and deployment.command.has("--enable-prefix-caching")
    assert deployment.source.line_of("draft") == line_of(VLLM_CONFIG, "model: ./draft")
    assert deployment.source.line_of("speculative.num_speculative_tokens") == line_of(VLLM_CONFIG, "num_speculative")
    assert deployment.flag_line("--tensor-parallel-size") == line_of(VLLM_CONFIG, "tensor_parallel_size")
    json_form = 'model: m\nspeculative-config: \'{"method": "ngram", "num_speculative_tokens": 2}\'\n'
    (from_json,), _ = load_deployments(_write(tmp_path, "json.yml", json_form))
    assert from_json.method == "ngram" and from_json.speculative["num_speculative_tokens"] == 2
    assert findings == []


MANIFEST_YAML = textwrap.dedent(
    """\
    version: 1
    deployments:
      - name: llama-eagle3
        engine: vllm==0.16.0
        target: ./target
        draft: ./draft
        method: eagle3
        speculative:
          num_speculative_tokens: 3
        device: cuda
        smoke: {min_acceptance_rate: 0.5}
      - name: sgl
        engine: sglang
        image: lmsysorg/sglang:v0.5.23-cu129
        launch: >
          python3 -m sglang.launch_server --model-path /models/t
          --speculative-algorithm EAGLE3 --speculative-draft-model-path /models/d
        draft: ./draft
    """
)


def test_manifest_yaml(tmp_path):
    deployments, findings = load_deployments(_write(tmp_path, "manifest.yaml", MANIFEST_YAML))
    built, launched = deployments
    assert built.engine is not None and str(built.engine) == "vllm==0.16.0"
    assert built.version_source is VersionSource.MANIFEST
    assert built.argv[:3] == ["vllm", "serve", "./target"]
    assert json.loads(built.argv[4]) == {"method": "eagle3", "model": "./draft", "num_speculative_tokens": 3}
    assert built.source.line_of("draft") == line_of(MANIFEST_YAML, "draft: ./draft")
    assert built.source.line_of("engine") == line_of(MANIFEST_YAML, "vllm==0.16.0")
    assert built.source.line_of("speculative.num_speculative_tokens") == line_of(MANIFEST_YAML, "num_speculative")
    assert built.smoke == {"min_acceptance_rate": 0.5} and built.device == "cuda"
    # With a launch, draft names the local copy of the container's /models/d.
    assert launched.draft == "./draft" and launched.target == "/models/t"
    assert launched.source.line_of("draft") == line_of(MANIFEST_YAML, "draft: ./draft", 2)
    assert launched.version_source is None and launched.image == "lmsysorg/sglang:v0.5.23-cu129"
    assert findings == []


MANIFEST_TOML = textwrap.dedent(
    """\
    version = 1

    [[deployments]]
    name = "sgl"
    engine = "sglang==0.5.23"
    target = "./target"
    draft = "./draft"
    method = "eagle3"

    [deployments.speculative]
    num_steps = 3
    eagle_topk = 1
    num_draft_tokens = 5

    [[deployments]]
    name = "bad"
    engine = "tgi==1.0"
    target = "t"
    """
)


def test_manifest_toml_and_schema_findings(tmp_path):
    deployments, findings = load_deployments(_write(tmp_path, "manifest.toml", MANIFEST_TOML))
    (sgl,) = deployments
    assert sgl.engine_name == "sglang" and sgl.method == "eagle3"
    assert sgl.command is not None and sgl.command.get("--speculative-num-draft-tokens") == "5"
    assert sgl.source.line_of("draft") == line_of(MANIFEST_TOML, 'draft = "./draft"')
    assert sgl.source.line_of("speculative.num_draft_tokens") == line_of(MANIFEST_TOML, "num_draft_tokens")
    (bad,) = findings
    assert bad.rule == "DEPLOY-MANIFEST-SCHEMA" and bad.line == line_of(MANIFEST_TOML, 'engine = "tgi==1.0"')


@pytest.mark.parametrize(
    ("name", "text", "rule", "severity"),
    [
        ("broken.yaml", "apiVersion: v1\nkind: Pod\nspec: [\n", "DEPLOY-VALUE", "error"),
        ("broken.toml", "[[deployments]\n", "DEPLOY-VALUE", "error"),
        ("broken.sh", "vllm serve 'unclosed\n", "DEPLOY-VALUE", "error"),
        ("unknown.yaml", "just: a mapping\n", "DEPLOY-NO-LAUNCH", "info"),
        ("list.json", "[1, 2]\n", "DEPLOY-NO-LAUNCH", "info"),
        ("patch.yaml", "- op: replace\n  path: /spec/replicas\n  value: 3\n", "DEPLOY-NO-LAUNCH", "info"),
        ("binary.yaml", "\udcff", "DEPLOY-VALUE", "error"),
    ],
)
def test_a_broken_or_foreign_file_is_one_finding_for_that_file(tmp_path, name, text, rule, severity):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    deployments, (finding,) = load_deployments(str(path))
    assert deployments == []
    assert finding.rule == rule and finding.severity == severity and finding.file == str(path)
    assert "\n" not in finding.message and name in finding.message


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n---\n# another\n", "#!/bin/sh\n"])
def test_an_input_with_nothing_in_it_is_empty(tmp_path, text):
    path = tmp_path / "empty.yaml"
    path.write_text(text)
    with pytest.raises(EmptyInputError):
        load_deployments(str(path))


def test_a_missing_path_cannot_run(tmp_path):
    with pytest.raises(CannotReadError):
        load_deployments(str(tmp_path / "absent.yaml"))


@pytest.mark.parametrize(
    ("image", "engine", "version"),
    [
        ("vllm/vllm-openai:v0.16.0", "vllm", "0.16.0"),
        ("docker.io/vllm/vllm-openai:v0.10.1rc1", "vllm", "0.10.1rc1"),
        ("lmsysorg/sglang:v0.5.23-cu129", "sglang", "0.5.23"),
        ("lmsysorg/sglang:v0.4.6.post1-cu124", "sglang", "0.4.6.post1"),
        ("lmsysorg/sglang:latest", "sglang", None),
        ("vllm/vllm-openai@sha256:" + "a" * 64, "vllm", None),
        ("registry:5000/vllm/vllm-openai", "vllm", None),
        ("vllm/vllm-openai:v0.16.0", "sglang", None),
    ],
)
def test_image_versions(image, engine, version):
    assert image_version(image, engine) == version


def test_image_entrypoints_and_names():
    assert image_entrypoint("vllm/vllm-openai:v0.16.0") == ("vllm", "serve")
    assert image_entrypoint("lmsysorg/sglang:v0.5.23") is None
    assert split_image("registry:5000/a/b:tag@sha256:00") == ("registry:5000/a/b", "tag")


def test_shell_split_lines_and_operators():
    text = "A=1 B=$A\nfoo && vllm serve m \\\n  --x $B # note\nbar; baz\n"
    commands = split_commands(text, first_line=10)
    assert [c.words for c in commands] == [["foo"], ["vllm", "serve", "m", "--x", "1"], ["bar"], ["baz"]]
    assert commands[1].lines == [11, 11, 11, 12, 12]


def test_arguments_alone_under_other_images(tmp_path):
    text = textwrap.dedent(
        """\
        apiVersion: v1
        kind: Pod
        metadata: {name: p}
        spec:
          containers:
            - name: custom
              image: registry.example.com/team/llm-server:2024.1
              args: ["m", "--speculative-config", '{"method": "ngram", "num_speculative_tokens": 3}']
            - name: sglang
              image: lmsysorg/sglang:v0.5.23-cu129
              args:
                - --model-path
                - m
                - --speculative-algorithm
                - NGRAM
        """
    )
    (custom, sglang), _ = load_deployments(_write(tmp_path, "pod.yaml", text))
    assert custom.argv[:3] == ["vllm", "serve", "m"] and custom.method == "ngram"
    assert [f.rule for f in custom.findings] == ["DEPLOY-ENTRYPOINT-ASSUMED"]
    assert sglang.engine_name == "sglang" and sglang.method == "ngram"
    (no_entrypoint,) = [f for f in sglang.findings if f.rule == "DEPLOY-NO-ENTRYPOINT"]
    assert no_entrypoint.severity == "error" and no_entrypoint.line == line_of(text, "- --model-path")


CONFIGMAP = textwrap.dedent(
    """\
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: vllm-config}
    data:
      serve.yaml: |
        model: Qwen/Qwen3-8B
        speculative_config:
          method: eagle3
          model: /models/draft
          num_spec_tokens: 3
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: qwen}
    spec:
      template:
        spec:
          volumes: [{name: cfg, configMap: {name: vllm-config}}]
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              args: ["--config", "/etc/vllm/serve.yaml", "--port", "8000"]
              volumeMounts: [{name: cfg, mountPath: /etc/vllm}]
    """
)


def test_vllm_config_from_a_configmap(tmp_path):
    (deployment,), _ = load_deployments(_write(tmp_path, "qwen.yaml", CONFIGMAP))
    assert deployment.target == "Qwen/Qwen3-8B" and deployment.draft == "/models/draft"
    assert deployment.source.line_of("speculative.num_spec_tokens") == line_of(CONFIGMAP, "num_spec_tokens")
    assert deployment.source.line_of("draft") == line_of(CONFIGMAP, "model: /models/draft")
    assert deployment.command is not None and deployment.command.get("--port") == "8000"


def test_vllm_config_file_beside_a_script(tmp_path):
    (tmp_path / "serve.yaml").write_text(VLLM_CONFIG, encoding="utf-8")
    script = "#!/bin/sh\nvllm serve --config serve.yaml --port 9000\n"
    (deployment,), _ = load_deployments(_write(tmp_path, "run.sh", script))
    assert deployment.target == "meta-llama/Llama-3.1-8B-Instruct" and deployment.method == "eagle3"
    assert deployment.source.line_of("draft") == 2


def _hub_cache(cache: Path, repo_id: str, source: Path) -> None:
    """Lay ``source``'s files out as huggingface_hub's cache does (refs/main -> snapshots/REV)."""
    import shutil

    folder = cache / f"models--{repo_id.replace('/', '--')}"
    revision = "0" * 40
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_text(revision, encoding="utf-8")
    shutil.copytree(source, folder / "snapshots" / revision)


def test_hub_ids_resolve_from_the_local_cache(tmp_path, demo, monkeypatch):
    from specprobe.pipeline.gate import gate_paths

    cache = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    _hub_cache(cache, "acme/target", demo / "target")
    _hub_cache(cache, "acme/draft-broken", demo / "draft-broken")
    text = (
        "#!/bin/sh\nvllm serve acme/target --speculative-config "
        '\'{"method": "eagle3", "model": "acme/draft-broken", "num_speculative_tokens": 3}\'\n'
    )
    report = gate_paths([_write(tmp_path, "hub.sh", text)])
    rules = {f.rule for f in report.findings}
    assert {"VOCAB-D2T-RANGE", "TARGET-AUX-LAYER-RANGE"} <= rules
    assert "DEPLOY-NOT-EXAMINED" not in rules


DOCKERFILE = textwrap.dedent(
    """\
    FROM python:3.12 AS build
    RUN pip wheel .

    FROM vllm/vllm-openai:v0.16.0
    ENV DRAFT=/models/draft
    # the image's entrypoint is `vllm serve`; CMD gives its arguments
    CMD ["/models/target", \\
         "--speculative-config", "{\\"method\\": \\"eagle3\\", \\"model\\": \\"/models/draft\\"}"]
    """
)


def test_dockerfile_final_stage(tmp_path):
    (deployment,), findings = load_deployments(_write(tmp_path, "Dockerfile", DOCKERFILE))
    assert deployment.argv[:3] == ["vllm", "serve", "/models/target"]
    assert deployment.image == "vllm/vllm-openai:v0.16.0" and deployment.method == "eagle3"
    assert deployment.source.line_of("draft") == line_of(DOCKERFILE, "CMD [")
    assert deployment.source.line_of("image") == line_of(DOCKERFILE, "FROM vllm")
    shell_form = (
        "FROM lmsysorg/sglang:v0.5.23\n"
        "CMD python3 -m sglang.launch_server --model-path m --speculative-algorithm NGRAM\n"
    )
    (sglang,), _ = load_deployments(_write(tmp_path, "Containerfile", shell_form))
    assert sglang.method == "ngram" and sglang.source.line == 2
    assert findings == []


@pytest.mark.parametrize(
    "argv",
    [
        ["/usr/bin/env", "A=1", "bash", "-lc", "vllm serve m"],
        ["/usr/bin/tini", "--", "vllm", "serve", "m"],
        ["timeout", "3600", "vllm", "serve", "m"],
        ["uv", "run", "--with", "vllm", "vllm", "serve", "m"],
        ["conda", "run", "-n", "serve", "python", "-m", "vllm.entrypoints.openai.api_server", "--model", "m"],
        ["podman", "run", "--rm", "-e", "X=1", "vllm/vllm-openai:v0.33.0", "m"],
    ],
)
def test_wrappers_are_seen_through(argv):
    from specprobe.deploy.launch import find_launches

    (launch,) = find_launches(argv, [1] * len(argv)).launches
    assert deployment_model(launch.argv) == "m"


def deployment_model(argv: list[str]) -> str | None:
    from specprobe.deploy.argv import parse_command

    return parse_command(argv).model


def test_env_from_configmaps_of_the_same_file(tmp_path):
    text = textwrap.dedent(
        """\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: model}
        data:
          MODEL: Qwen/Qwen3-8B
          DRAFT: AngelSlim/Qwen3-8B_eagle3
        ---
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: qwen}
        spec:
          template:
            spec:
              containers:
                - name: vllm
                  image: vllm/vllm-openai:v0.33.0
                  envFrom: [{configMapRef: {name: model}, prefix: CFG_}]
                  env:
                    - name: D
                      valueFrom: {configMapKeyRef: {name: model, key: DRAFT}}
                  command: ["/bin/sh", "-c"]
                  args:
                    - 'vllm serve $CFG_MODEL --speculative-config "{\\"method\\":\\"eagle3\\",\\"model\\":\\"$(D)\\"}"'
        """
    )
    (deployment,), _ = load_deployments(_write(tmp_path, "cm.yaml", text))
    assert (deployment.target, deployment.draft) == ("Qwen/Qwen3-8B", "AngelSlim/Qwen3-8B_eagle3")
