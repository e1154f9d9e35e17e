"""Every shipped snapshot: it loads, says how it was made, and every command takes its exact version."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from specprobe.cli import app
from specprobe.schema.store import known_versions, load_snapshot

runner = CliRunner()
SHIPPED = [(engine, version) for engine in ("vllm", "sglang") for version in known_versions(engine)]


def test_enough_releases_are_shipped():
    assert len(known_versions("vllm")) >= 5
    assert len(known_versions("sglang")) >= 2


@pytest.mark.parametrize(("engine", "version"), SHIPPED)
def test_snapshot_loads_with_provenance(engine, version):
    schema = load_snapshot(engine, version)
    assert schema is not None
    assert schema.version == version and schema.engine == engine and schema.source == "snapshot"
    assert schema.provenance.get("engine_version"), "engine_version is never null"
    assert schema.provenance.get("installed_by")
    assert schema.methods and schema.parameters
    if schema.provenance.get("probe_hash"):
        # Snapshots made by scripts/snapshot_all.py carry every fact rules build on.
        assert schema.model_architectures
        assert schema.eagle3_layer_prefixes
        assert schema.eagle3_fc_inputs in ("3", "aux_layer_ids")


@pytest.mark.parametrize(("engine", "version"), SHIPPED)
def test_schema_and_matrix_take_the_exact_version(engine, version):
    shown = runner.invoke(app, ["schema", f"{engine}=={version}", "-f", "json"])
    assert shown.exit_code == 0, shown.output
    payload = json.loads(shown.stdout)
    assert payload["version"] == version and payload["subject"]["engine"] == f"{engine}=={version}"
    matrix = runner.invoke(app, ["matrix", "--engine", f"{engine}=={version}", "-f", "json"])
    assert matrix.exit_code == 0, matrix.output
    assert json.loads(matrix.stdout)["subject"]["engine"] == f"{engine}=={version}"
