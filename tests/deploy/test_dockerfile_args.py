"""Dockerfile ARG defaults are expanded before the image tag is read: the release judged is the one
the build would pull, whether the tag comes from a default, a build argument or compose's build.args."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.deploy.dockerfile import final_image, parse_dockerfile

SPEC = json.dumps({"method": "eagle3", "model": "org/drafter", "num_speculative_tokens": 3})
CMD = json.dumps(["--model", "org/target", "--speculative-config", SPEC])


def _dockerfile(head: str) -> str:
    return textwrap.dedent(head) + f"CMD {CMD}\n"


def _engine(report: dict) -> str:
    return report["deployments"][0]["engine"]


def test_arg_default_in_from_is_the_release_judged(tmp_path: Path) -> None:
    head = "ARG VLLM_VERSION=v0.16.0\nFROM vllm/vllm-openai:${VLLM_VERSION}\n"
    (tmp_path / "Dockerfile").write_text(_dockerfile(head))
    result = CliRunner().invoke(app, ["gate", str(tmp_path / "Dockerfile"), "--format", "json"])
    assert _engine(json.loads(result.stdout)) == "vllm==0.16.0", result.stdout


def test_forms_of_expansion_and_build_arguments() -> None:
    text = _dockerfile(
        """\
        ARG REGISTRY=docker.io
        ARG TAG
        ARG IMAGE=${REGISTRY}/vllm/vllm-openai
        FROM python:3.12 AS builder
        ARG TAG=v9.9.9
        FROM $IMAGE:${TAG:-v0.18.0}
        """
    )
    assert final_image(text) == "docker.io/vllm/vllm-openai:v0.18.0"  # a stage's ARG is not a FROM's
    assert final_image(text, {"TAG": "v0.20.0"}) == "docker.io/vllm/vllm-openai:v0.20.0"
    deployments, _ = parse_dockerfile(text, "Dockerfile", Path(), {"TAG": "v0.20.0"})
    assert deployments[0].image == "docker.io/vllm/vllm-openai:v0.20.0"


def test_compose_build_args_replace_the_default(tmp_path: Path) -> None:
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "Dockerfile.vllm").write_text(
        _dockerfile("ARG VLLM_VERSION=v0.16.0\nFROM vllm/vllm-openai:${VLLM_VERSION}\n")
    )
    (tmp_path / "compose.yaml").write_text(
        textwrap.dedent(
            f"""\
            services:
              vllm:
                build:
                  context: docker
                  dockerfile: Dockerfile.vllm
                  args:
                    - VLLM_VERSION=v0.18.0
                command: {CMD}
            """
        )
    )
    result = CliRunner().invoke(app, ["gate", str(tmp_path / "compose.yaml"), "--format", "json"])
    assert _engine(json.loads(result.stdout)) == "vllm==0.18.0", result.stdout


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["ARG ", "FROM ", "ENV ", "${", "}", "$", ":-", "=", "A", "v0.1", "\n", " ", "\\\n"]),
                max_size=60))  # fmt: skip
def test_any_dockerfile_text_parses_or_is_a_finding(parts: list[str]) -> None:
    text = "".join(parts)
    final_image(text, {"A": "x"})
    parse_dockerfile(text, "Dockerfile", Path())
