"""`matrix record`: a smoke result becomes a schema-valid measured entry that then matches its pairing."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from specprobe.compat.evaluate import evaluate_entry
from specprobe.compat.loader import load_file, validation_errors
from specprobe.compat.model import EntryKind, Match, Status
from specprobe.compat.record import classify_measurement, load_smoke_json, merge_into, record_entry
from specprobe.compat.snapshots import StoreSnapshots
from specprobe.compat.subjects import build_pairing
from specprobe.findings import Severity, SpecprobeError
from tests.compat.conftest import drafter, target

SMOKE = Path(__file__).parent / "smoke"


def recorded(name: str):
    data = load_smoke_json(SMOKE / name)
    return data, record_entry(
        data,
        smoke_name=name,
        target=target(Path(data["subject"]["target"]).name),
        draft=drafter(Path(data["subject"]["draft"]).name),
    )


def test_field_report_run_becomes_a_degraded_entry():
    _, entry = recorded("field-report-vllm.json")
    assert entry.kind is EntryKind.MEASURED
    assert (entry.engine, str(entry.versions), entry.methods) == ("vllm", "==0.16.0", ("eagle3",))
    assert (entry.status, entry.severity) == (Status.DEGRADED, Severity.ERROR)
    assert entry.acceptance is not None and entry.acceptance.acceptance_rate == pytest.approx(0.152)
    assert "2813 drafts" in (entry.acceptance.note or "")
    assert entry.evidence[0].startswith("smoke-run:field-report-vllm.json@sha256:")
    assert entry.target_model_types == ("deepseek_v3",)
    assert dict(entry.target_config) == {
        "hidden_size": ("==7168",),
        "num_hidden_layers": ("==61",),
        "vocab_size": ("==163840",),
    }
    assert entry.draft_architectures == ("LlamaForCausalLMEagle3",)
    assert validation_errors({"entries": [entry.to_dict()]}) == []


def test_recorded_entry_matches_its_pairing_and_not_others():
    _, entry = recorded("field-report-vllm.json")
    same = build_pairing(
        engine="vllm==0.16.0",
        method="eagle3",
        target=target("kimi-k2.5"),
        draft=drafter("specforge-kimi-k2.5-eagle3"),
    )
    other_version = build_pairing(engine="vllm==0.18.0", method="eagle3", target=target("kimi-k2.5"))
    other_target = build_pairing(engine="vllm==0.16.0", method="eagle3", target=target("qwen3-8b"))
    # same family (deepseek_v3 text model, MLA) but another shape: the measurement does not carry over
    other_size = build_pairing(
        engine="vllm==0.16.0",
        method="eagle3",
        target=target("deepseek-v3"),
        draft=drafter("specforge-kimi-k2.5-eagle3"),
    )
    store = StoreSnapshots()
    verdict = evaluate_entry(entry, same, store)
    assert verdict.match is Match.APPLIES and verdict.fails
    assert evaluate_entry(entry, other_version, store).match is Match.NO
    assert evaluate_entry(entry, other_target, store).match is Match.NO
    assert evaluate_entry(entry, other_size, store).match is Match.NO


def test_reference_backend_run_is_engine_free_and_works():
    _, entry = recorded("reference-llama.json")
    assert entry.engine == "any" and str(entry.versions) == ""
    assert (entry.status, entry.severity) == (Status.WORKS, Severity.INFO)
    assert "reference backend" in (entry.acceptance.note or "")


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"lossless": False}, (Status.BROKEN, Severity.ERROR)),
        ({"acceptance_rate": 0.19}, (Status.DEGRADED, Severity.ERROR)),
        ({"acceptance_rate": 0.5, "mean_acceptance_length": 1.2}, (Status.DEGRADED, Severity.ERROR)),
        ({"acceptance_rate": 0.3, "mean_acceptance_length": 1.9}, (Status.DEGRADED, Severity.WARNING)),
        ({"acceptance_rate": 0.6, "mean_acceptance_length": 2.8}, (Status.WORKS, Severity.INFO)),
    ],
)
def test_measurement_thresholds(changes, expected):
    data = json.loads((SMOKE / "field-report-vllm.json").read_text())
    data.update(changes)
    assert classify_measurement(data) == expected


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: d.update(command="check"), "not of `specprobe smoke`"),
        (lambda d: d.pop("subject"), "no subject"),
        (lambda d: d["subject"].pop("target"), "no subject with a target"),
        (lambda d: (d.pop("acceptance_rate"), d.pop("mean_acceptance_length")), "neither acceptance_rate"),
        (lambda d: d.update(acceptance_rate=1.7), "not within [0, 1]"),
        (lambda d: d.update(mean_acceptance_length=0.5), "below 1"),
    ],
)
def test_bad_smoke_results_are_usage_errors(tmp_path: Path, mutate, message):
    data = json.loads((SMOKE / "field-report-vllm.json").read_text())
    mutate(data)
    path = tmp_path / "smoke.json"
    path.write_text(json.dumps(data))
    with pytest.raises(SpecprobeError) as raised:
        load_smoke_json(path)
    assert message in str(raised.value)


def test_not_json_and_missing(tmp_path: Path):
    bad = tmp_path / "smoke.json"
    bad.write_text("{nope")
    with pytest.raises(SpecprobeError, match="not valid JSON"):
        load_smoke_json(bad)
    with pytest.raises(SpecprobeError, match="does not exist"):
        load_smoke_json(tmp_path / "missing.json")


def test_merge_into_replaces_the_same_id(tmp_path: Path):
    _, entry = recorded("field-report-vllm.json")
    first = merge_into(None, entry)
    again = merge_into(first, entry)
    path = tmp_path / "measured.yaml"
    path.write_text(again)
    assert [e.id for e in load_file(path)] == [entry.id]
    _, other = recorded("reference-llama.json")
    path.write_text(merge_into(again, other))
    assert [e.id for e in load_file(path)] == [entry.id, other.id]
    with pytest.raises(SpecprobeError, match="not a matrix file"):
        merge_into(yaml.safe_dump({"something": "else"}), entry)


def test_record_does_not_alter_its_input():
    data = load_smoke_json(SMOKE / "field-report-vllm.json")
    before = copy.deepcopy(data)
    record_entry(data, smoke_name="x.json", target=target("kimi-k2.5"), draft=drafter("specforge-kimi-k2.5-eagle3"))
    assert data == before


@pytest.mark.parametrize(
    ("name", "status", "severity"),
    [
        ("demo-reference-good.json", Status.WORKS, Severity.INFO),
        ("demo-reference-shuffled-d2t.json", Status.DEGRADED, Severity.ERROR),
    ],
)
def test_real_reference_runs(name, status, severity):
    """Results written by `specprobe smoke` for the demo models: a trained drafter, and one with d2t shuffled."""
    data = load_smoke_json(SMOKE / name)
    entry = record_entry(data, smoke_name=name, target=target("demo-tiny-llama"), draft=drafter("demo-tiny-eagle3"))
    assert (entry.status, entry.severity) == (status, severity)
    assert entry.engine == "any" and dict(entry.target_config)["hidden_size"] == ("==64",)
    assert entry.acceptance is not None
    assert entry.acceptance.mean_acceptance_length == pytest.approx(data["mean_acceptance_length"])
    assert f"{data['drafts']} drafts" in (entry.acceptance.note or "")
    assert validation_errors({"entries": [entry.to_dict()]}) == []
