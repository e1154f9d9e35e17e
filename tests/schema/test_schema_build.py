"""Building the shipped store from raw probe replies: bulky values stored once, identical patch
releases kept as aliases, and the store reading both back exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from specprobe.schema import store
from specprobe.schema.snapshot import build_engine, release_line, surface

ARCHS = [f"Arch{index}ForCausalLM" for index in range(50)]


def vllm_record(version: str, *, methods: list[str], fc: str = "3") -> dict:
    reply = {
        "engine": "vllm",
        "version": version,
        "fields": {
            "method": {
                "type": {"anyOf": [{"enum": methods, "type": "string"}, {"type": "null"}]},
                "python_type": "Literal[...] | None",
                "default": None,
                "description": "The name of the speculative method to use. " * 5,
            },
            "num_speculative_tokens": {
                "type": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                "default": None,
                "constraints": {"gt": 0},
                "description": "The number of speculative tokens.",
            },
        },
        "methods": methods,
        "draft_architectures": ["Eagle3LlamaForCausalLM"],
        "model_architectures": ARCHS,
        "eagle3_fc_inputs": fc,
        "eagle3_layer_prefixes": ["layers.0.", "midlayer."],
        "cpu_attention_head_sizes": [64, 128],
        "cli_flags": [{"flags": ["--speculative-config"], "dest": "speculative_config", "help": "JSON."}],
        "provenance": {"engine_version": version, "interpreter": "/somewhere/bin/python", "import_seconds": 9.0},
    }
    return {
        "engine": "vllm",
        "version": version,
        "probe_hash": "abc",
        "installed_by": f"uv pip install vllm=={version}",
        "overlay": False,
        "figures": {"install_seconds": 1.0},
        "reply": reply,
    }


@pytest.fixture
def built(tmp_path, monkeypatch) -> Path:
    records = [
        vllm_record("0.9.0", methods=["ngram", "eagle", "eagle3"]),
        vllm_record("0.9.0.1", methods=["ngram", "eagle", "eagle3"]),
        vllm_record("0.9.1", methods=["ngram", "eagle", "eagle3", "mtp"]),
        vllm_record("0.10.0", methods=["ngram", "eagle", "eagle3", "mtp"], fc="aux_layer_ids"),
    ]
    lines = build_engine("vllm", records, tmp_path / "vllm")
    assert lines == [
        "vllm 0.9.0: written (full install, 0 problems)",
        "vllm 0.9.0.1: same surface as 0.9.0",
        "vllm 0.9.1: written (full install, 0 problems)",
        "vllm 0.10.0: written (full install, 0 problems)",
    ]
    monkeypatch.setattr(store, "_engine_dir", lambda engine: tmp_path / engine)
    store.clear_caches()
    yield tmp_path / "vllm"
    store.clear_caches()


def test_identical_patch_release_is_an_alias(built):
    assert sorted(path.name for path in built.glob("*.json")) == [
        "0.10.0.json",
        "0.9.0.json",
        "0.9.1.json",
        "_shared.json",
    ]
    assert store.known_versions("vllm") == ["0.9.0", "0.9.0.1", "0.9.1", "0.10.0"]
    alias = store.load_snapshot("vllm", "0.9.0.1")
    twin = store.load_snapshot("vllm", "0.9.0")
    assert alias is not None and twin is not None
    assert alias.version == "0.9.0.1" and alias.provenance["same_surface_as"] == "0.9.0"
    assert surface(alias) == surface(twin)


def test_shared_values_are_stored_once_and_read_back(built):
    shared = json.loads((built / "_shared.json").read_text())
    # One registry list, one description per distinct parameter spec, across three snapshots.
    assert sum(1 for value in shared["objects"].values() if value == ARCHS) == 1
    raw = json.loads((built / "0.9.1.json").read_text())
    assert raw["model_architectures"] == {"$shared": next(k for k, v in shared["objects"].items() if v == ARCHS)}
    schema = store.load_snapshot("vllm", "0.10.0")
    assert schema is not None
    assert schema.model_architectures == ARCHS
    assert schema.eagle3_fc_inputs == "aux_layer_ids"
    assert schema.cpu_attention_head_sizes == [64, 128]
    assert schema.parameters["num_speculative_tokens"].constraints == {"gt": 0}
    # Machine-local provenance is dropped; how it was installed is kept.
    assert "interpreter" not in schema.provenance and "import_seconds" not in schema.provenance
    assert schema.provenance["installed_by"] == "uv pip install vllm==0.10.0"


def test_a_minor_release_is_never_an_alias(tmp_path):
    records = [vllm_record("0.9.2", methods=["ngram"]), vllm_record("0.10.0", methods=["ngram"])]
    lines = build_engine("vllm", records, tmp_path)
    assert all("written" in line for line in lines)


def test_release_lines():
    assert release_line("vllm", "0.10.1.1") == "0.10"
    assert release_line("sglang", "0.5.15.post1") == "0.5.15"


def test_missing_shared_value_is_a_clear_error(built):
    (built / "_shared.json").write_text(json.dumps({"objects": {}, "same_surface": {}}))
    store.clear_caches()
    with pytest.raises(store.SpecprobeError, match=r"0\.9\.1\.json is unreadable: shared value .* is missing"):
        store.load_snapshot("vllm", "0.9.1")


def test_a_release_left_out_of_a_rebuild_keeps_its_shared_values(tmp_path, monkeypatch):
    folder = tmp_path / "vllm"
    build_engine("vllm", [vllm_record("0.9.1", methods=["ngram"]), vllm_record("0.10.0", methods=["eagle"])], folder)
    # Rebuilt from 0.10.0's reply alone (0.9.1's was made by another probe): 0.9.1's file stays readable.
    build_engine("vllm", [vllm_record("0.10.0", methods=["eagle", "eagle3"], fc="aux_layer_ids")], folder)
    monkeypatch.setattr(store, "_engine_dir", lambda engine: tmp_path / engine)
    store.clear_caches()
    try:
        kept = store.load_snapshot("vllm", "0.9.1")
        assert kept is not None and kept.methods == ["ngram"] and kept.model_architectures == ARCHS
        rebuilt = store.load_snapshot("vllm", "0.10.0")
        assert rebuilt is not None and rebuilt.methods == ["eagle", "eagle3"]
    finally:
        store.clear_caches()


def test_a_patch_release_built_later_is_an_alias_of_its_shipped_line(tmp_path, monkeypatch):
    folder = tmp_path / "vllm"
    build_engine("vllm", [vllm_record("0.9.0", methods=["ngram", "eagle3"])], folder)
    # A later run has only the patch releases' replies: the equal one becomes an alias of the shipped
    # 0.9.0, the one whose surface differs is written.
    lines = build_engine(
        "vllm",
        [vllm_record("0.9.0.1", methods=["ngram", "eagle3"]), vllm_record("0.9.1", methods=["ngram", "eagle3", "mtp"])],
        folder,
    )
    assert lines == ["vllm 0.9.0.1: same surface as 0.9.0", "vllm 0.9.1: written (full install, 0 problems)"]
    assert sorted(path.name for path in folder.glob("*.json")) == ["0.9.0.json", "0.9.1.json", "_shared.json"]
    monkeypatch.setattr(store, "_engine_dir", lambda engine: tmp_path / engine)
    store.clear_caches()
    try:
        assert store.known_versions("vllm") == ["0.9.0", "0.9.0.1", "0.9.1"]
        alias = store.load_snapshot("vllm", "0.9.0.1")
        assert alias is not None and alias.provenance["same_surface_as"] == "0.9.0"
    finally:
        store.clear_caches()
