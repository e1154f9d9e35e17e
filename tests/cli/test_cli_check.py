"""The whole-command check on its own: the issue's cases, history notes, argv rewrites, untrusted input."""

from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from specprobe.findings import Severity
from specprobe.pipeline.gate import lint_command
from specprobe.rules import cli_args
from specprobe.schema.cli import cli_versions, flag_history, load_cli, nearest_cli
from specprobe.schema.cli_diff import diff_cli


def _rules(engine: str, version: str, command: str) -> list[tuple[str, str | None]]:
    findings = cli_args.check_args(engine, version, shlex.split(command), program=engine)
    return [(f.rule, f.key) for f in findings]


def test_sglang_0_5_23_refuses_the_cuda_graph_max_bs_abbreviation_and_names_its_history() -> None:
    args = ["--model-path", "m", "--cuda-graph-max-bs", "512"]
    [finding] = cli_args.check_args("sglang", "0.5.23", args, program="x")
    assert finding.severity is Severity.ERROR
    assert "ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode" in finding.message
    assert "accepted up to sglang 0.5.19" in finding.message and "--cuda-graph-max-bs-decode" in finding.message


def test_sglang_0_5_19_still_had_it_as_a_deprecated_alias() -> None:
    assert _rules("sglang", "0.5.19", "--model-path m --cuda-graph-max-bs 512") == [
        ("CLI-DEPRECATED", "--cuda-graph-max-bs")
    ]


def test_a_removed_attention_config_field_is_refused_where_the_class_forbids_unknown_keys() -> None:
    findings = cli_args.check_args(
        "vllm", "0.34.0", ["m", "--attention-config", '{"use_fp4_indexer_cache": true}'], program="vllm serve"
    )
    [finding] = [f for f in findings if f.rule == "CLI-CONFIG-KEY"]
    assert "1 validation error for AttentionConfig: use_fp4_indexer_cache: Unexpected keyword argument" in (
        finding.message
    )
    assert "accepted up to vllm 0.27.0" in finding.message
    assert _rules("vllm", "0.27.0", "m --attention-config '{\"use_fp4_indexer_cache\": true}'") == []


def test_a_typo_is_unrecognized_with_a_suggestion_through_lint() -> None:
    report = lint_command(shlex.split("vllm serve m --max-model-lenght 4096"), engine="vllm==0.32.0")
    [finding] = [f for f in report.findings if f.rule == "CLI-REFUSED"]
    assert "unrecognized arguments: --max-model-lenght 4096" in finding.message
    assert finding.hint is not None and "--max-model-len" in finding.hint


def test_vllm_rewrites_are_replayed() -> None:
    command = "m --max_model_len=8k -O3 --compilation-config.mode 3 --attention-config.backend FLASH_ATTN"
    assert _rules("vllm", "0.33.0", command) == []
    assert _rules("vllm", "0.33.0", "m --compilation-config.modez 3") == [("CLI-CONFIG-KEY", "--compilation-config")]


def test_values_left_to_the_runtime_are_not_judged() -> None:
    assert _rules("vllm", "0.33.0", "m --tensor-parallel-size $TP --dtype ${DTYPE} $EXTRA_ARGS") == []


def test_a_release_between_snapshots_is_judged_by_the_older_one_and_says_so() -> None:
    snapshot, note = nearest_cli("vllm", "0.20.0")
    assert snapshot is not None and snapshot.version == "0.18.0" and note is not None and "0.18.0" in note
    assert nearest_cli("vllm", "0.8.5")[0] is None


def test_flag_history_names_the_last_release_and_the_replacement() -> None:
    history = flag_history("sglang", "--cuda-graph-max-bs", "0.5.23")
    assert (history.last_with, history.first_without) == ("0.5.19", "0.5.20")
    assert history.replacement == "--cuda-graph-max-bs-decode"


def test_every_snapshot_loads_and_its_parser_rebuilds() -> None:
    for engine in ("vllm", "sglang"):
        assert cli_versions(engine)
        for version in cli_versions(engine):
            snapshot = load_cli(engine, version)
            assert snapshot is not None and snapshot.options
            cli_args.build_parser(snapshot)


def test_named_types_agree_with_the_release_callables_on_the_probe_samples() -> None:
    """Each type this module reads by name answers the probe's sample values as the release's own
    callable did (recorded as ``accepts``)."""
    from specprobe.schema.cli import SAMPLE_VALUES

    checked = 0
    for engine in ("vllm", "sglang"):
        for version in cli_versions(engine):
            snapshot = load_cli(engine, version)
            assert snapshot is not None
            for option in snapshot.options:
                names = option.type_names()
                if option.accepts is None or not names or option.config_class():
                    continue
                convert = cli_args._type_callable(option.type, option.accepts)
                assert convert is not None
                for sample in SAMPLE_VALUES:
                    try:
                        convert(sample)
                        took = True
                    except Exception:
                        took = False
                    assert took == (sample in option.accepts), (engine, version, option.flags, names, sample)
                checked += 1
    assert checked > 100


def test_schema_diff_of_the_whole_cli() -> None:
    old, new = load_cli("sglang", "0.5.19"), load_cli("sglang", "0.5.20")
    assert old is not None and new is not None
    diff = diff_cli(old, new)
    assert "--cuda-graph-max-bs" in diff.removed or any(o == "--cuda-graph-max-bs" for o, _ in diff.renamed)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet="-_=.{}[]\"':, $abcmx0123456789", max_size=24), max_size=10))
def test_any_argument_vector_gives_findings_never_an_exception(args: list[str]) -> None:
    for engine, version in (("vllm", "0.33.0"), ("sglang", "0.5.23")):
        findings = cli_args.check_args(engine, version, args, program=engine)
        assert all(f.rule.startswith("CLI-") for f in findings)


def test_between_snapshots_an_option_the_newer_one_has_is_no_certain_refusal() -> None:
    # --device-memory-utilization is in 0.32.0's parser, not in 0.30.0's: for 0.31.0 it cannot be told.
    old, new = load_cli("vllm", "0.30.0"), load_cli("vllm", "0.32.0")
    assert old is not None and new is not None
    flag = "--device-memory-utilization"
    assert flag not in old.by_flag() and flag in new.by_flag()
    findings = cli_args.check_args("vllm", "0.31.0", ["m", flag, "0.8"], program="vllm serve")
    assert [(f.rule, f.severity) for f in findings if f.key == flag] == [("CLI-REFUSED", Severity.INFO)]
    typo = cli_args.check_args("vllm", "0.31.0", ["m", "--max-model-lenght", "8"], program="vllm serve")
    assert [f.severity for f in typo if f.rule == "CLI-REFUSED"] == [Severity.ERROR]


def test_a_real_inferencex_script_is_refused_by_sglang_0_5_23_for_cuda_graph_max_bs() -> None:
    from pathlib import Path

    from specprobe.pipeline.gate import gate_paths

    script = Path(__file__).parents[1] / "deploy" / "real" / "inferencex-glm52-sglang-mtp" / "glm5.2_fp8_mi325x_mtp.sh"
    report = gate_paths([str(script)], engine=None)
    refused = [f for f in report.findings if f.rule == "CLI-REFUSED"]
    assert refused and all(f.key == "--cuda-graph-max-bs" for f in refused)
    assert refused[0].line is not None and "--cuda-graph-max-bs" in script.read_text().splitlines()[refused[0].line - 1]
