"""Each class of hostile input ends as a finding (exit 1), or for a path that is not a folder as one
``specprobe: error:`` line (exit 2): never an internal error, a traceback, a write or a hang."""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest

from specprobe.checkpoint import folder as folder_module
from specprobe.checkpoint.folder import load_checkpoint
from specprobe.hfconfig import MAX_CONFIG_BYTES
from specprobe.untrusted.files import MAX_JSON_DEPTH
from tests.hostile.builders import nested, split_safetensors, valid_draft, write_safetensors_raw
from tests.hostile.cli import invoke, run_cli


def check_json(folder: Path, *extra: str) -> dict:
    outcome = invoke("check", str(folder), "--format", "json", *extra)
    return json.loads(outcome.stdout)


def fired(report: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for finding in report["findings"]:
        out.setdefault(finding["rule"], []).append(finding["message"])
    return out


@pytest.fixture
def draft(tmp_path: Path) -> Path:
    return valid_draft(tmp_path / "draft")


# --- symlink loops, FIFOs, directories, vanishing files ---------------------------------------------


@pytest.mark.parametrize("where", ["model.safetensors", "config.json", "tokenizer/vocab.json", "a/b/c/loop"])
def test_a_symlink_loop_anywhere_is_a_finding(draft: Path, where: str) -> None:
    link = draft / where
    if where in ("model.safetensors", "config.json"):
        link.unlink()
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(link.name + ".other")
    (link.parent / (link.name + ".other")).symlink_to(link.name)
    report = check_json(draft)
    assert not report["ok"]
    messages = fired(report)["FILES-UNREADABLE"]
    assert any(where in message and "symlink loop" in message for message in messages)


def test_a_directory_symlink_to_its_own_folder_is_not_followed(draft: Path) -> None:
    (draft / "sub").mkdir()
    (draft / "sub" / "up").symlink_to("..")
    report = check_json(draft)
    assert "FILES-UNREADABLE" not in fired(report)


@pytest.mark.parametrize("kind", ["fifo", "directory", "fifo-behind-symlink"])
def test_config_json_that_is_not_a_regular_file_is_a_finding(draft: Path, kind: str) -> None:
    (draft / "config.json").unlink()
    if kind == "fifo":
        os.mkfifo(draft / "config.json")
    elif kind == "directory":
        (draft / "config.json").mkdir()
    else:
        os.mkfifo(draft / "pipe")
        (draft / "config.json").symlink_to("pipe")
    report = check_json(draft)
    assert "not a regular file" in fired(report)["FILES-CONFIG-MISSING"][0]


def test_a_fifo_swapped_in_after_listing_is_refused_without_blocking(
    draft: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = folder_module._scan

    def scan_then_swap(ckpt: folder_module.Checkpoint, root: Path) -> set[str]:
        readable = original(ckpt, root)
        (root / "config.json").unlink()
        os.mkfifo(root / "config.json")  # opening it for reading would block without O_NONBLOCK
        (root / "model.safetensors").unlink()  # vanished
        return readable

    monkeypatch.setattr(folder_module, "_scan", scan_then_swap)
    checkpoint = load_checkpoint(draft)
    messages = {issue.kind: issue.message for issue in checkpoint.issues}
    assert "FIFO" in messages["config-invalid"]
    assert "cannot read" in messages["header"]
    assert checkpoint.config_raw is None


def test_a_draft_path_that_is_not_a_folder_is_one_line(tmp_path: Path) -> None:
    for path in [tmp_path / "missing", tmp_path / ("x" * 5000), tmp_path / "line\nPASS 0 error(s)"]:
        outcome = invoke("check", str(path), allowed=())
        assert outcome.exit_code == 2


# --- deep nesting, long integers, NaN ----------------------------------------------------------------


def test_deeply_nested_config_json_is_a_finding(draft: Path) -> None:
    (draft / "config.json").write_text('{"a": ' + nested(100_000) + "}", encoding="utf-8")
    message = fired(check_json(draft))["FILES-CONFIG-INVALID"][0]
    assert f"nested deeper than {MAX_JSON_DEPTH} levels" in message


def test_nesting_just_inside_the_bound_still_parses(draft: Path) -> None:
    config = json.loads((draft / "config.json").read_text(encoding="utf-8"))
    config["quantization_config"] = json.loads(nested(MAX_JSON_DEPTH - 1))
    (draft / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert "FILES-CONFIG-INVALID" not in fired(check_json(draft))


def test_a_5000_digit_integer_in_config_json_is_a_finding(draft: Path) -> None:
    config = (draft / "config.json").read_text(encoding="utf-8").rstrip().removesuffix("}")
    (draft / "config.json").write_text(config + ', "vocab_size": ' + "9" * 5000 + "}", encoding="utf-8")
    assert "4300 digits" in fired(check_json(draft))["FILES-CONFIG-INVALID"][0]


def test_an_integer_beyond_64_bits_in_config_json_is_a_finding(draft: Path) -> None:
    config = (draft / "config.json").read_text(encoding="utf-8").rstrip().removesuffix("}")
    (draft / "config.json").write_text(config + ', "hidden_size": ' + "9" * 4000 + "}", encoding="utf-8")
    assert "64-bit" in fired(check_json(draft))["FILES-CONFIG-INVALID"][0]


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nan_literals_are_read_as_the_engines_read_them_and_said(draft: Path, literal: str) -> None:
    config = (draft / "config.json").read_text(encoding="utf-8").rstrip().removesuffix("}")
    (draft / "config.json").write_text(config + f', "rope_theta": {literal}}}', encoding="utf-8")
    rules = fired(check_json(draft))
    assert literal in rules["FILES-CONFIG-NONSTANDARD-JSON"][0]
    assert "FILES-CONFIG-INVALID" not in rules


def test_deeply_nested_safetensors_header_is_a_finding(draft: Path) -> None:
    header = ('{"x": ' + nested(50_000) + "}").encode()
    write_safetensors_raw(draft / "model.safetensors", header, b"")
    assert "nested deeper" in fired(check_json(draft))["FILES-HEADER-INVALID"][0]


@pytest.mark.parametrize(
    "entry",
    [
        {"dtype": "F32", "shape": [2**64], "data_offsets": [0, 4]},
        {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 4]},
        {"dtype": "F32", "shape": [1] * 100_000 + [2**63], "data_offsets": [0, 4]},
        {"dtype": "F32", "shape": [1], "data_offsets": [0, 10**4000]},
    ],
)
def test_header_sizes_beyond_64_bits_are_a_finding(draft: Path, entry: dict) -> None:
    header, data = split_safetensors(draft / "model.safetensors")
    header["lm_head.weight"] = entry
    write_safetensors_raw(draft / "model.safetensors", json.dumps(header).encode(), data)
    rules = fired(check_json(draft))
    assert "FILES-HEADER-INVALID" in rules
    assert all(len(message) < 2000 for message in rules["FILES-HEADER-INVALID"])


def test_deeply_nested_shard_index_is_a_finding(draft: Path) -> None:
    (draft / "model.safetensors.index.json").write_text('{"weight_map": ' + nested(100_000) + "}")
    assert "nested deeper" in fired(check_json(draft))["FILES-INDEX-INVALID"][0]


# --- sizes -------------------------------------------------------------------------------------------


def test_an_oversized_config_json_is_refused_from_its_size(draft: Path) -> None:
    config = json.loads((draft / "config.json").read_text(encoding="utf-8"))
    config["id2label"] = {str(i): f"label {i}" for i in range(MAX_CONFIG_BYTES // 16)}
    (draft / "config.json").write_text(json.dumps(config), encoding="utf-8")
    message = fired(check_json(draft))["FILES-CONFIG-INVALID"][0]
    assert "above the" in message and "limit" in message


def test_a_header_length_above_the_bound_is_refused_before_reading(draft: Path) -> None:
    path = draft / "model.safetensors"
    with path.open("wb") as handle:
        handle.write(struct.pack("<Q", 64 * 1024 * 1024))
    os.truncate(path, 8 + 64 * 1024 * 1024)  # sparse: the length fits the file, the bound refuses it
    assert "limit specprobe reads" in fired(check_json(draft))["FILES-HEADER-INVALID"][0]


def test_many_header_files_share_one_budget(draft: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from specprobe.checkpoint.safetensors_header import read_header

    one_header = read_header(draft / "model.safetensors").data_start
    monkeypatch.setattr(folder_module, "MAX_TOTAL_HEADER_BYTES", one_header)
    for index in range(3):
        (draft / f"extra-{index}.safetensors").write_bytes((draft / "model.safetensors").read_bytes())
    messages = fired(check_json(draft))["FILES-HEADER-INVALID"]
    assert any("not read" in message for message in messages)


# --- lint and --speculative-config ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [nested(100_000, "{}"), '{"num_speculative_tokens": ' + "9" * 5000 + "}", '{"num_speculative_tokens": NaN}'],
)
def test_hostile_speculative_config_is_a_finding(value: str) -> None:
    outcome = invoke("lint", "--format", "json", "--", "vllm", "serve", "m", "--speculative-config", value)
    assert outcome.exit_code == 1
    rules = {f["rule"] for f in json.loads(outcome.stdout)["findings"]}
    assert rules & {"LINT-SPEC-CONFIG-JSON", "LINT-SPEC-CONFIG-VALUE"}


@pytest.mark.parametrize(
    "name",
    ["x" * 5000, "~no-such-user-here/model", "a\x00b", "../" * 2000 + "m"],
    ids=["too-long", "unknown-user", "nul", "deep-relative"],
)
def test_hostile_model_names_in_lint_are_handled(name: str) -> None:
    spec = json.dumps({"method": "eagle3", "model": name, "num_speculative_tokens": 3})
    invoke("lint", "--", "vllm", "serve", name, "--speculative-config", spec)
    invoke("lint", "--", "python", "-m", "sglang.launch_server", "--model-path", name,
           "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", name)  # fmt: skip


# --- terminal injection ----------------------------------------------------------------------------------


def test_file_names_and_values_cannot_forge_lines_or_control_the_terminal(draft: Path) -> None:
    hostile = "x\nPASS 0 error(s), 0 warning(s)\x1b[2J\u202e"
    config = json.loads((draft / "config.json").read_text(encoding="utf-8"))
    config["architectures"] = [hostile + "[bold]"]
    config["auto_map"] = {"AutoModel": hostile + ".Model"}
    (draft / "config.json").write_text(json.dumps(config), encoding="utf-8")
    (draft / (hostile + ".safetensors")).write_bytes(b"\x00" * 4)
    outcome = run_cli("check", str(draft))
    lines = outcome.stdout.splitlines()
    assert not any(line.startswith("PASS") for line in lines)
    # The verdict, then only the next steps specprobe writes itself (`specprobe rule ID`, a fix command).
    verdict = max(i for i, line in enumerate(lines) if line.startswith("FAIL"))
    assert lines[verdict + 1 :] and all(line.startswith(("next: ", "why: ")) for line in lines[verdict + 1 :])
    assert "\u202e" not in outcome.stdout and "\\x1b[2J" in outcome.stdout


def test_a_not_a_folder_path_with_a_newline_stays_one_line(tmp_path: Path) -> None:
    outcome = run_cli("check", str(tmp_path / "no\nPASS"), allowed=())
    assert outcome.exit_code == 2 and "\\n" in outcome.stderr
