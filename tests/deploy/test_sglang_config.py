"""SGLang's ``--config FILE``: read from a ConfigMap of the same manifest (or the file beside it) as SGLang's
ConfigArgumentMerger reads it, so the speculative settings and the whole command are checked."""

from __future__ import annotations

from pathlib import Path

from specprobe.deploy.sglang_config import sglang_config_arguments
from specprobe.deploy.yamlsource import load_documents
from specprobe.pipeline.gate import gate_paths, load_paths

DATA = Path(__file__).parent / "data" / "sglang_config"
MANIFEST = DATA / "dynamo-sglang-configmap.yaml"


def test_the_mounted_config_carries_the_speculative_settings() -> None:
    [deployment], _ = load_paths([str(MANIFEST)])
    assert deployment.method == "eagle3"
    assert deployment.draft == "jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B"
    assert deployment.target == "meta-llama/Llama-3.1-8B-Instruct"


def test_a_flag_in_the_config_file_is_checked_and_located_in_the_configmap() -> None:
    report = gate_paths([str(MANIFEST)])
    [finding] = [f for f in report.findings if f.rule == "CLI-REFUSED"]
    assert "ambiguous option: --cuda-graph-max-bs" in finding.message
    lines = MANIFEST.read_text().splitlines()
    assert finding.line is not None and "cuda-graph-max-bs: 64" in lines[finding.line - 1]


def test_booleans_follow_sglang_store_true_or_value_forms() -> None:
    text = "trust-remote-code: true\nenable-metrics: false\nspeculative-eagle-topk: 1\ncuda-graph-bs: [1, 2]\n"
    [config] = load_documents(text, "worker.yaml")
    words, _ = sglang_config_arguments(config)
    assert words == ["--trust-remote-code", "--speculative-eagle-topk", "1", "--cuda-graph-bs", "1", "2"]
