"""Fixed reports and a fixed rule catalogue for the reporter tests: golden files must not change when
a rule's wording in the real catalogue does."""

from __future__ import annotations

from specprobe.findings import Finding, Report, Section, Severity
from specprobe.rules import Rule

RULES: dict[str, Rule] = {
    r.id: r
    for r in (
        Rule(
            "VOCAB-D2T-RANGE",
            "vocab",
            Severity.ERROR,
            "every i + d2t[i] must be a target token id in [0, target vocab)",
            ("https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models/llama_eagle3.py",),
            why="vLLM adds d2t to arange(draft_vocab): an out-of-range id indexes past the target's embedding.",
            fix="Store offsets: d2t[i] = target_id(i) - i.",
        ),
        Rule(
            "TARGET-MAX-POSITION",
            "target",
            Severity.WARNING,
            "draft max_position_embeddings below the target's",
            ("https://github.com/vllm-project/vllm/issues/48894",),
        ),
        Rule(
            "TARGET-ATTENTION",
            "target",
            Severity.INFO,
            "the target's attention kind",
            ("https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/speculative.py",),
        ),
        Rule(
            "LINT-SPEC-TOKENS",
            "lint",
            Severity.WARNING,
            "num_speculative_tokens beyond what the drafter was trained for",
            ("https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/config/speculative.py",),
        ),
        Rule(
            "COMPAT-KNOWN-GOOD",
            "compat",
            Severity.INFO,
            "a matrix entry says this pairing works",
            ("https://github.com/vllm-project/vllm/pull/16937",),
        ),
    )
}

K8S = "k8s/Deployment/vllm-eagle3/container/vllm"
COMPOSE = "compose/sglang-eagle3"


def deployments_report() -> Report:
    """A gate report over two deployments of two files, with hostile characters in one message."""
    report = Report(
        command="gate",
        subject={"paths": "deploy/k8s.yaml, deploy/compose.yaml"},
        specprobe_version="0.1.0",
        sections=[Section(name) for name in (K8S, COMPOSE, "k8s/Deployment/quiet/container/vllm")],
    )
    report.extend(
        [
            Finding(
                rule="VOCAB-D2T-RANGE",
                severity=Severity.ERROR,
                message="207 of 1024 entries map outside [0, 4096)",
                location="model.safetensors:d2t",
                hint="d2t[i] = target_id(i) - i",
                evidence=["https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/model_executor/models/llama_eagle3.py"],
                file="drafts/eagle3/model.safetensors",
                deployment=K8S,
            ),
            Finding(
                rule="LINT-SPEC-TOKENS",
                severity=Severity.WARNING,
                message="num_speculative_tokens 8, drafter trained for 3: 50% | <b>x</b>, a:b\r\n\x1b[31mred",
                location="deploy/k8s.yaml:27",
                file="deploy/k8s.yaml",
                line=27,
                deployment=K8S,
            ),
            Finding(
                rule="COMPAT-KNOWN-GOOD",
                severity=Severity.INFO,
                message="sglang==0.5.23: EAGLE-3 on Llama-3 works",
                file="deploy/compose.yaml",
                line=9,
                deployment=COMPOSE,
            ),
            Finding(
                rule="TARGET-MAX-POSITION",
                severity=Severity.WARNING,
                message="draft max_position_embeddings 2048 < target's 131072",
                location="config.json:max_position_embeddings",
                file="drafts/eagle3/config.json",
                deployment=COMPOSE,
            ),
        ]
    )
    return report
