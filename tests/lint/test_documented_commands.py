"""lint on the serve commands the engines' own documentation gives: no error and no warning.

Each command is copied from the documentation page at the pinned commit named beside it; where SGLang
fills a setting itself (the draft path of targets with their own MTP layers, NGRAM's topk and
num-draft-tokens), lint must say so instead of failing the command.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from specprobe.demo.fixtures import target_config, write_json
from specprobe.findings import Severity
from specprobe.pipeline.gate import lint_command

SGLANG_DOC = (
    "https://github.com/sgl-project/sglang/blob/067ad4d335bbd6da15d4a83a6f257cfa9e0f6be0/"
    "docs/advanced_features/speculative_decoding.md"
)
VLLM_DOC = (
    "https://github.com/vllm-project/vllm/blob/01ed47b4166b26251895a9c298352fcdb2385149/"
    "docs/features/speculative_decoding/README.md"
)
VLLM_MTP_DOC = (
    "https://github.com/vllm-project/vllm/blob/1ae6abe1b8ab4ee25540b2ea9f88f64fc878b04d/"
    "docs/features/speculative_decoding/mtp.md"
)

DOCUMENTED = {
    # SGLANG_DOC, "EAGLE-3 Decoding"
    "sglang-eagle3-llama": (
        "sglang==0.5.23",
        "python3 -m sglang.launch_server --model meta-llama/Meta-Llama-3.1-8B-Instruct "
        "--speculative-algorithm EAGLE3 --speculative-draft-model-path jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B "
        "--speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16 "
        "--mem-fraction-static 0.7 --cuda-graph-max-bs 8 --dtype float16 --log-level warning",
    ),
    # SGLANG_DOC, "EAGLE-2 Decoding"
    "sglang-eagle2-llama": (
        "sglang==0.5.23",
        "python3 -m sglang.launch_server --model meta-llama/Llama-2-7b-chat-hf --speculative-algorithm EAGLE "
        "--speculative-draft-model-path lmsys/sglang-EAGLE-llama2-chat-7B --speculative-num-steps 3 "
        "--speculative-eagle-topk 4 --speculative-num-draft-tokens 16 --mem-fraction-static 0.7 "
        "--cuda-graph-max-bs 8 --log-level warning",
    ),
    # SGLANG_DOC, "Multi Token Prediction": no draft path, the target's own MTP layers draft.
    "sglang-mtp-mimo": (
        "sglang==0.5.23",
        "python3 -m sglang.launch_server --model XiaomiMiMo/MiMo-7B-RL --host 0.0.0.0 --trust-remote-code "
        "--speculative-algorithm EAGLE --speculative-num-steps 1 --speculative-eagle-topk 1 "
        "--speculative-num-draft-tokens 2 --mem-fraction-static 0.7 --cuda-graph-max-bs 8 --log-level warning",
    ),
    # SGLANG_DOC links the DeepSeek page for DeepSeek MTP; the same flags with a DeepSeek-V3 target.
    "sglang-mtp-deepseek-v3": (
        "sglang==0.5.23",
        "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3-0324 --speculative-algorithm EAGLE "
        "--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2 "
        "--trust-remote-code --tp 8",
    ),
    # SGLANG_DOC, "Ngram Speculative Decoding": only num-draft-tokens given, SGLang derives the rest. The
    # page was written for SGLang 0.5.3-0.5.9; --speculative-ngram-max-match-window-size is gone from 0.5.10
    # (see test_the_ngram_window_flag_is_gone_in_0_5_23), so it is left out here.
    "sglang-ngram": (
        "sglang==0.5.23",
        "python3 -m sglang.launch_server --model Qwen/Qwen2.5-7B-Instruct --speculative-algorithm NGRAM "
        "--speculative-num-draft-tokens 16 "
        "--speculative-ngram-max-bfs-breadth 10 --mem-fraction-static 0.7 --cuda-graph-max-bs 8 --log-level warning",
    ),
    # VLLM_DOC, "N-gram"
    "vllm-ngram": (
        "vllm==0.33.0",
        "vllm serve Qwen/Qwen3-8B --speculative-config "
        '\'{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_min": 2, "prompt_lookup_max": 5}\'',
    ),
    # VLLM_DOC, "Suffix decoding"
    "vllm-suffix": (
        "vllm==0.33.0",
        "vllm serve Qwen/Qwen3-8B --speculative-config "
        '\'{"method": "suffix", "num_speculative_tokens": 8, "suffix_decoding_max_tree_depth": 24, '
        '"suffix_decoding_max_cached_requests": 10000, "suffix_decoding_max_spec_factor": 1.0, '
        '"suffix_decoding_min_token_prob": 0.1}\'',
    ),
    # VLLM_MTP_DOC, "Online Example"
    "vllm-mtp-mimo": (
        "vllm==0.33.0",
        "vllm serve XiaomiMiMo/MiMo-7B-Base --tensor-parallel-size 1 "
        '--speculative-config \'{"method":"mtp","num_speculative_tokens":1}\'',
    ),
    # vLLM's EAGLE page (docs/features/speculative_decoding/eagle.md): the speculators EAGLE-3 drafter.
    "vllm-eagle3-speculators": (
        "vllm==0.33.0",
        "vllm serve meta-llama/Meta-Llama-3-8B-Instruct --tensor-parallel-size 2 --speculative-config "
        '\'{"model": "RedHatAI/Llama-3.1-8B-Instruct-speculator.eagle3", "draft_tensor_parallel_size": 2, '
        '"num_speculative_tokens": 2, "method": "eagle3"}\'',
    ),
}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Hub ids stay hub ids: nothing is downloaded and an empty cache holds none of them.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_documented_command_has_no_error_or_warning(name: str) -> None:
    engine, command = DOCUMENTED[name]

    report = lint_command(shlex.split(command), engine=engine)

    loud = [f"{f.rule}: {f.message}" for f in report.findings if f.severity is not Severity.INFO]
    if engine == "sglang==0.5.23" and " --cuda-graph-max-bs " in command:
        # The page predates SGLang 0.5.20, which dropped the --cuda-graph-max-bs alias: 0.5.23's own
        # parser refuses the abbreviation as ambiguous (tests/cli/labels.json), and so must lint.
        assert [f.key for f in report.findings if f.rule == "CLI-REFUSED"] == ["--cuda-graph-max-bs"]
        loud = [line for line in loud if not line.startswith("CLI-REFUSED")]
    assert loud == []


def test_a_hub_target_not_on_this_machine_gets_the_list_sglang_fills_the_draft_path_for() -> None:
    _, command = DOCUMENTED["sglang-mtp-deepseek-v3"]

    report = lint_command(shlex.split(command), engine="sglang==0.5.23")

    [finding] = [f for f in report.findings if f.rule == "LINT-SGLANG-DRAFT-PATH"]
    assert finding.severity is Severity.INFO
    assert "DeepseekV3ForCausalLM" in finding.message and "not on this machine" in finding.message
    assert any("/v0.5.2" in url for url in finding.evidence)


def _target(folder: Path, architecture: str) -> Path:
    folder.mkdir()
    write_json(folder / "config.json", target_config(architecture=architecture, model_type="x"))
    return folder


def test_a_local_mtp_target_has_its_draft_path_filled(tmp_path: Path) -> None:
    target = _target(tmp_path / "dsv3", "DeepseekV3ForCausalLM")
    argv = ["python", "-m", "sglang.launch_server", "--model-path", str(target), "--speculative-algorithm", "EAGLE"]

    report = lint_command(argv, engine="sglang==0.5.23")

    [finding] = [f for f in report.findings if f.rule == "LINT-SGLANG-DRAFT-PATH"]
    assert finding.severity is Severity.INFO and "fills" in finding.message


@pytest.mark.parametrize(("version", "severity"), [("0.5.23", "error"), ("0.4.6", "error")])
def test_a_local_target_without_mtp_layers_needs_the_draft_path(tmp_path: Path, version: str, severity: str) -> None:
    target = _target(tmp_path / "llama", "LlamaForCausalLM")
    argv = ["python", "-m", "sglang.launch_server", "--model-path", str(target), "--speculative-algorithm", "EAGLE3"]

    report = lint_command(argv, engine=f"sglang=={version}")

    assert [f.severity for f in report.findings if f.rule == "LINT-SGLANG-DRAFT-PATH"] == [severity]


def test_mimo_is_self_drafting_only_from_the_release_that_added_its_mtp_class(tmp_path: Path) -> None:
    target = _target(tmp_path / "mimo", "MiMoForCausalLM")
    argv = ["python", "-m", "sglang.launch_server", "--model-path", str(target), "--speculative-algorithm", "EAGLE"]

    before = lint_command(argv, engine="sglang==0.4.6")
    after = lint_command(argv, engine="sglang==0.4.7")

    assert [f.severity for f in before.findings if f.rule == "LINT-SGLANG-DRAFT-PATH"] == ["error"]
    assert [f.severity for f in after.findings if f.rule == "LINT-SGLANG-DRAFT-PATH"] == ["info"]


def test_eagle_steps_given_partly_is_still_an_error() -> None:
    argv = shlex.split(
        "python -m sglang.launch_server --model-path m --speculative-algorithm EAGLE3 "
        "--speculative-draft-model-path d --speculative-num-steps 3"
    )

    report = lint_command(argv, engine="sglang==0.5.23")

    assert "LINT-SGLANG-SPEC-STEPS" in report.fired()


def test_lint_cites_the_source_of_the_version_checked() -> None:
    argv = shlex.split("vllm serve m --speculative-config '{\"method\": \"eagle3\", \"model\": \"d\", \"bogus\": 1}'")

    report = lint_command(argv, engine="vllm==0.34.0")

    [finding] = [f for f in report.findings if f.rule == "LINT-SPEC-CONFIG-KEY"]
    assert finding.evidence[0] == "https://github.com/vllm-project/vllm/blob/v0.34.0/vllm/config/speculative.py"


def test_the_ngram_window_flag_is_gone_in_0_5_23() -> None:
    _, command = DOCUMENTED["sglang-ngram"]
    argv = [*shlex.split(command), "--speculative-ngram-max-match-window-size", "12"]

    report = lint_command(argv, engine="sglang==0.5.23")

    # The flag is reported once (the whole-command check leaves it to LINT-UNKNOWN-FLAG); the page's
    # --cuda-graph-max-bs is refused by 0.5.23 as well.
    loud = [(f.rule, f.key) for f in report.findings if f.severity is not Severity.INFO]
    assert loud == [
        ("LINT-UNKNOWN-FLAG", "--speculative-ngram-max-match-window-size"),
        ("CLI-REFUSED", "--cuda-graph-max-bs"),
    ]


def test_a_lint_rule_that_raises_is_an_internal_error_and_exit_2(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import specprobe.pipeline.lint as lint_module
    from specprobe.cli import app

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("rule bug")

    monkeypatch.setattr(lint_module, "_lint_vllm", broken)
    argv = ["lint", "--engine", "vllm==0.33.0", "--format", "json", "--", "vllm", "serve", "m"]
    result = CliRunner().invoke(app, argv)

    assert result.exit_code == 2, result.output
    assert '"INTERNAL-ERROR"' in result.stdout


def test_eagle3_without_a_draft_path_is_an_error_even_for_an_mtp_target(tmp_path: Path) -> None:
    target = _target(tmp_path / "dsv3", "DeepseekV3ForCausalLM")
    argv = ["python", "-m", "sglang.launch_server", "--model-path", str(target), "--speculative-algorithm", "EAGLE3"]

    report = lint_command(argv, engine="sglang==0.5.23")

    assert [f.severity for f in report.findings if f.rule == "LINT-SGLANG-DRAFT-PATH"] == ["error"]
