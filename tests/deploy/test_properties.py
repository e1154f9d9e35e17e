"""Property tests: no input makes a deployment parser raise anything but the one-line SpecprobeError,
every located finding points inside the file, and parsing stays fast."""

from __future__ import annotations

import re
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from specprobe.deploy.loader import load_deployments
from specprobe.deploy.model import deployment_from_argv
from specprobe.deploy.shell import split_commands
from specprobe.findings import SpecprobeError

FAST = settings(max_examples=40, deadline=3000, suppress_health_check=[HealthCheck.too_slow])

words = st.sampled_from(
    ["vllm", "serve", "python3", "-m", "sglang.launch_server", "vllm.entrypoints.openai.api_server", "sh", "-c",
     "--speculative-config", "--speculative-algorithm", "EAGLE3", "--model-path", "--model", "$(X)", "${Y:-d}",
     '{"method": "eagle3", "model": "d"}', "{", "'", '"', "\\", "&&", ";", "|", "#", "exec", "A=b", "docker", "run",
     "vllm/vllm-openai:v0.16.0", "lmsysorg/sglang:latest", "--speculative-draft-model-path", "\n", "$$", "-tp", "8"]
)
arguments = st.lists(st.one_of(words, st.text(max_size=12)), max_size=14)


def load_text(text: str, name: str) -> tuple[list[Any], list[Any]]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        started = time.perf_counter()
        try:
            deployments, findings = load_deployments(str(path))
        except SpecprobeError as exc:
            assert "\n" not in str(exc).strip() or "YAML" in str(exc)
            return [], []
        assert time.perf_counter() - started < 2.5
        # YAML (1.1, PyYAML) also breaks lines at \r, NEL and the Unicode line/paragraph separators.
        lines = max(1, len(re.split("\r\n|[\r\n\x85\u2028\u2029]", text)))
        for finding in [*findings, *(f for d in deployments for f in d.findings)]:
            assert finding.line is None or 1 <= finding.line <= lines + 1, (finding, lines)
        return deployments, findings


@FAST
@given(st.text(max_size=400))
def test_shell_text_never_crashes(text):
    try:
        commands = split_commands(text)
    except SpecprobeError:
        return
    for command in commands:
        assert len(command.words) == len(command.lines)


@FAST
@given(arguments)
def test_argv_never_crashes(argv):
    try:
        deployment = deployment_from_argv(argv)
    except SpecprobeError:
        return
    assert deployment.engine_name in ("vllm", "sglang")


@FAST
@given(st.text(max_size=400), st.sampled_from(["a.yaml", "b.sh", "c.toml", "d.json", "e.txt", "Dockerfile"]))
def test_any_text_in_any_form(text, name):
    load_text(text, name)


def container(draw_args: list[str], draw_command: list[str] | None, image: str, env: list[tuple[str, str]]) -> dict:
    spec: dict[str, Any] = {"name": "c", "image": image, "args": draw_args}
    if draw_command is not None:
        spec["command"] = draw_command
    spec["env"] = [{"name": k, "value": v} for k, v in env]
    return spec


images = st.sampled_from(["vllm/vllm-openai:v0.33.0", "lmsysorg/sglang:v0.5.23", "busybox", "vllm/vllm-openai"])
env_pairs = st.lists(st.tuples(st.sampled_from(["X", "Y", "MODEL"]), st.text(max_size=10)), max_size=3)
kinds = st.sampled_from(["Deployment", "StatefulSet", "Pod", "Job", "CronJob", "DaemonSet"])


@FAST
@given(kinds, arguments, st.one_of(st.none(), arguments), images, env_pairs)
def test_kubernetes_structures(kind, args, command, image, env):
    pod = {"containers": [container(args, command, image, env)]}
    if kind == "Pod":
        spec: dict[str, Any] = pod
    elif kind == "CronJob":
        spec = {"jobTemplate": {"spec": {"template": {"spec": pod}}}}
    else:
        spec = {"template": {"spec": pod}}
    document = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x"}, "spec": spec}
    deployments, _ = load_text(yaml.safe_dump_all([document, document]), "k.yaml")
    for deployment in deployments:
        assert deployment.name.startswith(f"k8s/{kind}/x/container/c")


@FAST
@given(st.one_of(arguments, st.text(max_size=60)), st.one_of(st.none(), arguments), images, env_pairs)
def test_compose_structures(command, entrypoint, image, env):
    service: dict[str, Any] = {"image": image, "command": command, "environment": dict(env)}
    if entrypoint is not None:
        service["entrypoint"] = entrypoint
    load_text(yaml.safe_dump({"services": {"llm": service}}), "compose.yaml")


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=8), st.dates()),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.one_of(st.text(max_size=6), st.dates(), st.integers()), children, max_size=3),
    max_leaves=8,
)


@FAST
@given(st.dictionaries(st.sampled_from(["model", "speculative_config", "tensor-parallel-size", "port", "x"]),
                       json_values, min_size=1))
def test_vllm_config_structures(config):
    load_text(yaml.safe_dump(config), "serve.yaml")


@FAST
@given(st.lists(st.dictionaries(
    st.sampled_from(["name", "engine", "target", "draft", "method", "speculative", "launch", "device", "smoke"]),
    st.one_of(json_values, st.sampled_from(["vllm==0.33.0", "sglang", "vllm serve m", "eagle3"])),
), max_size=3))
def test_manifest_structures(entries):
    load_text(yaml.safe_dump({"deployments": entries}), "manifest.yaml")


def test_alias_bomb_is_bounded():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
        f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(8)
    )
    started = time.perf_counter()
    load_text("apiVersion: v1\nkind: Pod\n" + bomb + "spec: {containers: [{name: c, image: i, args: *i}]}\n", "b.yaml")
    assert time.perf_counter() - started < 2.5
