"""The exported JSON Schema works with the jsonschema library: real configs pass, wrong ones fail."""

from __future__ import annotations

import json
import subprocess

import pytest
from jsonschema import Draft202012Validator
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.schema.jsonschema_export import to_json_schema
from specprobe.schema.store import load_snapshot

# --speculative-config objects as the vLLM docs and the field report write them.
VALID_0_33 = [
    {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3},
    {"model": "/models/kimi-k2.5-eagle3", "method": "eagle3", "num_speculative_tokens": 3,
     "draft_tensor_parallel_size": 1},
    {"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4, "prompt_lookup_min": 2},
    {"method": "deepseek_mtp", "num_speculative_tokens": 1},
    {"method": "suffix", "suffix_decoding_max_tree_depth": 24, "suffix_decoding_min_token_prob": 0.1},
    {"model": "meta-llama/Llama-3.2-1B-Instruct", "method": "draft_model", "num_speculative_tokens": 4,
     "max_model_len": 4096, "revision": None, "quantization": "fp8"},
    {"method": "eagle", "model": "yuhuili/EAGLE-LLaMA3-Instruct-8B", "num_speculative_tokens": 2,
     "rejection_sample_method": "synthetic", "synthetic_acceptance_rates": [0.8, 0.6]},
    {"method": "eagle3", "model": "x", "num_speculative_tokens": 2,
     "num_speculative_tokens_per_batch_size": [[1, 8, 4], [9, 64, 2]]},
]

INVALID_0_33 = [
    ({"method": "medusa"}, "medusa"),
    ({"method": "mlp_speculator", "model": "ibm/granite-3b-accelerator"}, "mlp_speculator"),
    ({"method": "eagle3", "num_speculative_tokens": 0}, "0"),
    ({"method": "ngram", "prompt_lookup_max": 0}, "0"),
    ({"speculative_model": "x"}, "speculative_model"),
    ({"method": "eagle3", "draft_tensor_parallel_size": 0}, "0"),
    ({"method": "eagle3", "num_speculative_tokens_per_batch_size": [[1, 8]]}, "[1, 8]"),
]
# Engine-set fields are refused by the exported schema (vLLM overwrites them; users cannot set them).
INTERNAL_0_33 = [({"method": "eagle3", "target_model_config": {}}, "target_model_config")]

# Run inside vLLM's interpreter: does vLLM's own pydantic validation of each field accept the value?
VLLM_ACCEPTS = r"""
import dataclasses, json, sys, typing
from pydantic import TypeAdapter, ValidationError
from vllm.config import SpeculativeConfig
hints = typing.get_type_hints(SpeculativeConfig, include_extras=True)
fields = {f.name: f for f in dataclasses.fields(SpeculativeConfig)}
verdicts = []
for config in json.loads(sys.stdin.read()):
    ok = True
    for key, value in config.items():
        if key not in fields:
            ok = False
            break
        annotation = hints[key]
        metadata = list(getattr(fields[key].default, "metadata", None) or [])
        if metadata:
            annotation = typing.Annotated[(annotation, *metadata)]
        try:
            TypeAdapter(annotation).validate_json(json.dumps(value))
        except ValidationError:
            ok = False
            break
    verdicts.append(ok)
print("VERDICTS" + json.dumps(verdicts))
"""


@pytest.fixture(scope="module")
def validator_0_33() -> Draft202012Validator:
    schema = load_snapshot("vllm", "0.33.0")
    assert schema is not None
    document = to_json_schema(schema)
    Draft202012Validator.check_schema(document)
    return Draft202012Validator(document)


@pytest.mark.parametrize("config", VALID_0_33)
def test_real_configs_pass(validator_0_33, config):
    assert list(validator_0_33.iter_errors(config)) == []


@pytest.mark.parametrize(("config", "mentioned"), INVALID_0_33 + INTERNAL_0_33)
def test_wrong_configs_fail(validator_0_33, config, mentioned):
    errors = list(validator_0_33.iter_errors(config))
    assert errors
    assert any(mentioned in error.message for error in errors), [error.message for error in errors]


def test_medusa_passes_where_the_engine_still_had_it():
    old = load_snapshot("vllm", "0.16.0")
    assert old is not None
    assert "medusa" in old.methods
    assert list(Draft202012Validator(to_json_schema(old)).iter_errors({"method": "medusa"})) == []


def test_cli_jsonschema_output_is_usable_directly():
    result = CliRunner().invoke(app, ["schema", "vllm", "--version", "0.33.0", "--format", "jsonschema"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    validator = Draft202012Validator(document)
    assert validator.is_valid(VALID_0_33[0])
    assert not validator.is_valid({"method": "medusa"})
    # Internal, engine-set fields are not offered to users.
    assert "draft_model_config" not in document["properties"]
    assert document["properties"]["num_speculative_tokens"]["exclusiveMinimum"] == 0


def test_sglang_jsonschema_keys_are_argument_names():
    schema = load_snapshot("sglang", "0.5.23")
    assert schema is not None
    validator = Draft202012Validator(to_json_schema(schema))
    good = {"speculative_algorithm": "EAGLE3", "speculative_draft_model_path": "/models/draft",
            "speculative_num_steps": 3, "speculative_eagle_topk": 1, "speculative_num_draft_tokens": 4}
    assert list(validator.iter_errors(good)) == []
    assert not validator.is_valid({"speculative_attention_mode": "sideways"})
    assert not validator.is_valid({"speculative_num_steps": "three"})


@pytest.mark.engine
def test_vllm_itself_agrees_with_the_exported_schema(vllm_python):
    """The same configs through vLLM 0.33.0's own field validation: accepted and refused alike."""
    configs = VALID_0_33 + [config for config, _ in INVALID_0_33]
    completed = subprocess.run(
        [str(vllm_python), "-c", VLLM_ACCEPTS], input=json.dumps(configs), capture_output=True, text=True,
        timeout=300, check=True, env={"PATH": "/usr/bin:/bin", "VLLM_TARGET_DEVICE": "cpu"},
    )
    line = next(line for line in completed.stdout.splitlines() if line.startswith("VERDICTS"))
    verdicts = json.loads(line[len("VERDICTS"):])
    assert verdicts == [True] * len(VALID_0_33) + [False] * len(INVALID_0_33)
