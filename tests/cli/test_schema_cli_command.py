"""`specprobe schema diff ENGINE OLD NEW --cli` and `specprobe schema ENGINE --cli`."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from specprobe.cli import app


def test_the_whole_cli_diff_names_removed_and_added_options_and_config_fields() -> None:
    result = CliRunner().invoke(app, ["schema", "diff", "vllm", "0.27.0", "0.32.0", "--cli", "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert "--calculate-kv-scales" in payload["options_removed"]
    assert "--device-memory-utilization" in payload["options_added"]
    assert "use_fp4_indexer_cache" in payload["config_fields"]["AttentionConfig"]["removed"]


def test_the_release_list_and_an_unknown_release() -> None:
    listed = CliRunner().invoke(app, ["schema", "sglang", "--cli"])
    assert listed.exit_code == 0 and "0.5.19" in listed.stdout and "0.5.23" in listed.stdout
    missing = CliRunner().invoke(app, ["schema", "diff", "vllm", "0.20.0", "0.32.0", "--cli"])
    assert missing.exit_code == 2 and "no whole-CLI snapshot of vllm 0.20.0" in missing.output
