"""Property tests over launch commands, ``--speculative-config`` and deployment files: lint and gate
end in a report (or, for what is not a serve command or not a deployment file, one usage error)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from specprobe.deploy.argv import parse_command
from specprobe.deploy.loader import load_deployments
from specprobe.findings import Report, SpecprobeError
from specprobe.pipeline.gate import lint_command
from tests.fuzz.conftest import EXAMPLES
from tests.fuzz.strategies import JSON_VALUES, NASTY_TEXT, dumps, hostile_snippets

LAUNCHERS = st.sampled_from(
    [
        ["vllm", "serve"],
        ["python", "-m", "sglang.launch_server"],
        ["python3", "-m", "vllm.entrypoints.openai.api_server"],
        ["sglang", "serve"],
        ["env", "A=1", "vllm", "serve"],
        ["python", "-X", "dev", "-m", "sglang.launch_server"],
        [],
    ]
)
FLAGS = st.sampled_from(
    [
        "--speculative-config", "-sc", "--speculative-config.method", "--speculative-config.num_speculative_tokens",
        "--spec-method", "--spec-tokens", "--speculative-model", "--model", "--model-path",
        "--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-steps",
        "--speculative-eagle-topk", "--speculative-num-draft-tokens", "--pipeline-parallel-size", "-pp",
        "--tensor-parallel-size", "--enable-lora", "--device", "--trust-remote-code", "--",
    ]
)  # fmt: skip
VALUES = st.one_of(
    NASTY_TEXT,
    st.text(max_size=15),
    st.integers(min_value=-5, max_value=10**30).map(str),
    JSON_VALUES.map(dumps),
    hostile_snippets(),
    st.sampled_from(["eagle3", "EAGLE3", "eagle", "ngram", "medusa", "dflash", "²", "٣", "1e3", "0x10"]),
)
ARGVS = st.builds(
    lambda launcher, model, words: [*launcher, model, *words],
    LAUNCHERS,
    VALUES,
    st.lists(st.one_of(FLAGS, VALUES), max_size=12),
)
ENGINES = st.sampled_from([None, "vllm", "vllm==0.16.0", "vllm==0.33.0", "sglang==0.5.23", "sglang", "vllm==9.9"])


@EXAMPLES
@given(ARGVS)
def test_parse_command_parses_or_refuses(argv: list[str]) -> None:
    try:
        parse_command(argv)
    except SpecprobeError as exc:
        assert "\n" not in str(exc)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf-cache"))
    monkeypatch.delenv("SPECPROBE_VLLM_PYTHON", raising=False)
    monkeypatch.delenv("SPECPROBE_SGLANG_PYTHON", raising=False)


def _assert_no_internal_error(report: Report) -> None:
    assert "INTERNAL-ERROR" not in report.fired(), [f.message for f in report.findings if f.rule == "INTERNAL-ERROR"]


@EXAMPLES
@given(ARGVS, ENGINES)
def test_lint_reports_or_refuses_any_command(argv: list[str], engine: str | None) -> None:
    try:
        report = lint_command(argv, engine=engine)
    except SpecprobeError as exc:
        assert "\n" not in str(exc)
        return
    _assert_no_internal_error(report)


SPEC_CONFIGS = st.one_of(
    JSON_VALUES.map(dumps),
    st.dictionaries(
        st.sampled_from(["method", "model", "num_speculative_tokens", "draft_tensor_parallel_size", "max_model_len",
                         "prompt_lookup_max", "quantization", "acceptance_method", "modle"]),
        JSON_VALUES,
        max_size=5,
    ).map(dumps),
    hostile_snippets(),
)  # fmt: skip


@EXAMPLES
@given(SPEC_CONFIGS)
def test_any_speculative_config_is_linted(value: str) -> None:
    report = lint_command(["vllm", "serve", "m", "--speculative-config", value], engine="vllm==0.33.0")
    _assert_no_internal_error(report)


def _yaml_scalar(value: str) -> str:
    return json.dumps(value)


K8S = st.builds(
    lambda image, args, command: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n"
    f"    - name: c\n      image: {_yaml_scalar(image)}\n      args: {dumps(args)}\n"
    + (f"      command: {dumps(command)}\n" if command is not None else ""),
    st.sampled_from(["vllm/vllm-openai:v0.33.0", "lmsysorg/sglang:v0.5.23", "busybox", "x:y:z", ""]),
    st.one_of(st.lists(st.one_of(FLAGS, VALUES), max_size=8), JSON_VALUES),
    st.one_of(st.none(), st.lists(st.one_of(FLAGS, VALUES, st.sampled_from(["vllm", "serve"])), max_size=4)),
)
COMPOSE = st.builds(
    lambda command, environment: "services:\n  llm:\n    image: vllm/vllm-openai:v0.33.0\n"
    f"    command: {dumps(command)}\n    environment: {dumps(environment)}\n",
    st.one_of(st.lists(st.one_of(FLAGS, VALUES), max_size=8), VALUES),
    JSON_VALUES,
)
SCRIPTS = st.builds(
    lambda argv: "#!/bin/sh\n" + " ".join(json.dumps(word) for word in argv) + "\n",
    ARGVS,
)
DEPLOYMENT_FILES = st.one_of(
    st.tuples(st.just("pod.yaml"), K8S),
    st.tuples(st.just("compose.yaml"), COMPOSE),
    st.tuples(st.just("serve.sh"), SCRIPTS),
    st.tuples(st.sampled_from(["x.yaml", "x.toml", "x.sh", "x.txt"]), st.text(max_size=80)),
    st.tuples(st.sampled_from(["x.yaml", "x.json"]), JSON_VALUES.map(dumps)),
    st.tuples(st.just("deep.yaml"), st.integers(min_value=1, max_value=3000).map(lambda d: "[" * d + "]" * d)),
)


@EXAMPLES
@given(DEPLOYMENT_FILES)
def test_deployment_files_load_or_are_a_usage_error(
    tmp_path_factory: pytest.TempPathFactory, named: tuple[str, str]
) -> None:
    name, text = named
    path = tmp_path_factory.mktemp("deploy") / name
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        load_deployments(str(path))
    except SpecprobeError as exc:
        assert "\n" not in str(exc)
