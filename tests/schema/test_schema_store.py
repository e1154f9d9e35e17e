"""The shipped snapshot store: versions, newest, provenance, and that importing it stays cheap."""

from __future__ import annotations

import json
import subprocess
import sys

from jsonschema import Draft202012Validator
from packaging.version import Version

from specprobe.schema.jsonschema_export import to_json_schema
from specprobe.schema.store import known_versions, load_snapshot, nearest_version

REQUIRED = {"vllm": ["0.16.0", "0.18.0", "0.28.0", "0.33.0", "0.34.0"], "sglang": ["0.5.23"]}


def test_required_snapshots_are_shipped():
    for engine, versions in REQUIRED.items():
        shipped = known_versions(engine)
        assert set(versions) <= set(shipped), (engine, shipped)
    # SGLang: the current release plus at least one older one.
    assert len(known_versions("sglang")) >= 2


def test_versions_are_in_pep440_order_and_newest_is_default():
    versions = known_versions("vllm")
    assert versions == sorted(versions, key=Version)
    newest = load_snapshot("vllm")
    assert newest is not None
    assert newest.version == versions[-1]
    assert newest.source == "snapshot"


def test_unknown_engine_or_version_is_none():
    assert load_snapshot("vllm", "0.0.1") is None
    assert load_snapshot("tgi") is None
    assert known_versions("tgi") == []


def test_version_spelling_is_normalised():
    assert load_snapshot("vllm", "0.33") is not None
    assert load_snapshot("vllm", "0.33").version == "0.33.0"


# Problems a shipped snapshot may carry: vLLM 0.9.1/0.9.2's CPU attention sizes live in the old
# torch_sdpa backend, not in cpu_attn.py; SGLang 0.5.6/0.5.7's algorithms are read from source
# because spec_info imports CUDA kernels.
PARTIAL_FACTS = ("cpu attention head sizes:", "algorithms read from spec_info.py's source")


def test_every_snapshot_is_complete_and_has_provenance():
    for engine in ("vllm", "sglang"):
        for version in known_versions(engine):
            schema = load_snapshot(engine, version)
            assert schema is not None
            assert schema.version == version
            assert schema.methods, (engine, version)
            assert schema.parameters, (engine, version)
            assert schema.draft_architectures, (engine, version)
            # A fact the probe could only partly read is said, never silently empty; the core
            # surface (methods, parameters, draft classes) is never among them.
            assert all(problem.startswith(PARTIAL_FACTS) for problem in schema.problems), (engine, version)
            for key in ("engine_version", "python", "extracted_at", "specprobe_version", "installed_by"):
                assert schema.provenance.get(key), (engine, version, key)
            # A patch release shipped as its line's twin says whose probe it is.
            probed = schema.provenance.get("same_surface_as", version)
            assert schema.provenance["engine_version"] == probed
            # Every family member is a method and every method is in a family.
            grouped = [method for members in schema.method_families.values() for method in members]
            assert sorted(grouped) == sorted(schema.methods)
            Draft202012Validator.check_schema(to_json_schema(schema))


def test_loaded_snapshot_is_a_private_copy():
    first = load_snapshot("vllm", "0.33.0")
    assert first is not None
    first.methods.append("bogus")
    again = load_snapshot("vllm", "0.33.0")
    assert again is not None
    assert "bogus" not in again.methods


def test_importing_the_store_does_not_import_an_engine_or_torch():
    code = (
        "import json, sys; import specprobe.schema.store as s; s.load_snapshot('vllm'); "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('torch', 'transformers', 'vllm', 'sglang', 'rich', 'typer'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == []


def test_nearest_version_is_the_newest_not_newer():
    assert nearest_version("vllm", "0.33.0") == "0.33.0"
    # A release without its own snapshot (none ships 0.16.5) gets the newest one below it.
    assert "0.16.5" not in known_versions("vllm") and "0.16.0" in known_versions("vllm")
    assert nearest_version("vllm", "0.16.5") == "0.16.0"
    assert nearest_version("vllm", "99.0") == known_versions("vllm")[-1]
    assert nearest_version("vllm", "0.1.0") is None
    assert nearest_version("vllm", "not-a-version") is None


def test_eagle3_target_gate_follows_the_releases():
    # 0.16 (the field report's version) gates EAGLE-3 targets by model_type and leaves out kimi_k2;
    # 0.18 renamed the list (aux_hidden_states_supported), added the MLA families and also gates
    # extract_hidden_states; later releases gate by the target class instead and carry no list.
    old = load_snapshot("vllm", "0.16.0")
    assert old is not None and old.eagle3_target_supported is not None
    assert "llama" in old.eagle3_target_supported and "kimi_k2" not in old.eagle3_target_supported
    assert old.provenance["eagle3_target_gate"] == {
        "variable": "eagle3_target_supported",
        "methods": ["eagle3"],
        "match": "substring",
    }
    newer = load_snapshot("vllm", "0.18.0")
    assert newer is not None and newer.eagle3_target_supported is not None
    assert {"kimi_k2", "deepseek_v3"} <= set(newer.eagle3_target_supported)
    assert newer.provenance["eagle3_target_gate"] == {
        "variable": "aux_hidden_states_supported",
        "methods": ["eagle3", "extract_hidden_states"],
        "match": "substring",
    }
    first = load_snapshot("vllm", "0.8.5")
    if first is not None:
        # The first form: `"llama" not in model_type` written inline, no named list.
        assert first.eagle3_target_supported == ["llama"]
        assert first.provenance["eagle3_target_gate"]["variable"] is None
    for version in ("0.28.0", "0.33.0", "0.34.0"):
        schema = load_snapshot("vllm", version)
        assert schema is not None and schema.eagle3_target_supported is None, version
