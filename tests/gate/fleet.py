"""A fleet manifest: one Kubernetes Deployment per drafter, each serving the same target with EAGLE-3 on
vLLM 0.33.0 (what the gate's run cache and hub benchmarks scale over)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: eagle3-{index}
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.33.0
          args:
            - {target}
            - --speculative-config
            - '{{"method": "eagle3", "model": "{draft}", "num_speculative_tokens": 3}}'
"""


def write_fleet(path: Path, target: object, drafts: Sequence[object]) -> Path:
    """``path``: a multi-document manifest of one Deployment per entry of ``drafts`` (repeats allowed)."""
    path.write_text(
        "---\n".join(DEPLOYMENT.format(index=i, target=target, draft=d) for i, d in enumerate(drafts)),
        encoding="utf-8",
    )
    return path
