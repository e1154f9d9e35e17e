"""The dry run names the models a command makes the engine resolve through the one parser of speculative
settings: every spelling of the drafter (JSON, dotted form, --spec-model) and no crash on a hostile value."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from specprobe.deploy.argv import parse_command
from specprobe.pipeline.dryrun import referenced_models


@pytest.mark.parametrize(
    "speculative",
    [
        ["--speculative-config", '{"method": "eagle3", "model": "org/drafter"}'],
        ["--speculative-config.model", "org/drafter"],
        ["--spec-model", "org/drafter"],
    ],
)
def test_every_spelling_of_the_drafter_is_a_referenced_model(speculative: list[str]) -> None:
    command = parse_command(["vllm", "serve", "org/target", *speculative])
    assert referenced_models(command) == ["org/target", "org/drafter"]


@settings(max_examples=50, deadline=None)
@given(st.integers(min_value=1, max_value=200_000), st.sampled_from(["[", "{\"a\":", "[{\"model\":"]))
def test_a_deeply_nested_value_is_no_crash(depth: int, opener: str) -> None:
    command = parse_command(["vllm", "serve", "org/target", "--speculative-config", opener * depth])
    assert referenced_models(command) == ["org/target"]
