"""The shipped manifest JSON Schema is itself valid, and the example manifests follow it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from specprobe.deploy.manifest import manifest_schema

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_schema_is_valid_draft_2020_12():
    Draft202012Validator.check_schema(manifest_schema())


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("good/manifest.*")), ids=lambda p: p.name)
def test_good_example_manifests_follow_the_schema(path):
    data = tomllib.loads(path.read_text("utf-8")) if path.suffix == ".toml" else yaml.safe_load(path.read_text("utf-8"))
    assert list(Draft202012Validator(manifest_schema()).iter_errors(data)) == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"name": "x"}, "is not valid under any of the given schemas"),
        ({"engine": "vllm>=0.16", "target": "t"}, "does not match"),
        ({"launch": "vllm serve m", "device": "tpu"}, "is not one of"),
        ({"launch": "vllm serve m", "smoke": {"min_acceptance_rate": 2}}, "is greater than the maximum"),
        ({"launch": "vllm serve m", "speculative_config": {}}, "Additional properties are not allowed"),
    ],
)
def test_schema_refuses(entry, message):
    errors = list(Draft202012Validator(manifest_schema()).iter_errors({"deployments": [entry]}))
    assert any(message in error.message for error in errors), [e.message for e in errors]
