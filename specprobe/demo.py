"""The built-in example: a valid EAGLE-3 drafter, a broken copy and their target, checked side by side.

Folder names are fixed (``target``, ``draft``, ``draft-broken``) so that trained weights can later
replace the random ones without changing the demo.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specprobe.check import run_check
from specprobe.checkpoint.builder import DraftSpec, build_target, draft_config, draft_tensors, vocab_map, write_json
from specprobe.checkpoint.writer import write_safetensors
from specprobe.findings import Report, SpecprobeError

TARGET_LAYERS = 16
DEMO_SPEC = DraftSpec(
    draft_format="vllm-native",
    hidden_size=256,
    num_attention_heads=8,
    num_key_value_heads=2,
    intermediate_size=512,
    vocab_size=4096,
    draft_vocab_size=1024,
    aux_layer_ids=[1, 7, 12],
    max_position_embeddings=8192,
    dtype="BF16",
)
# What the broken copy must show: d2t stored as absolute ids, and an aux layer the target lacks.
EXPECTED_BROKEN = ("VOCAB-D2T-RANGE", "TARGET-AUX-LAYER-RANGE")


@dataclass
class DemoResult:
    root: Path
    valid: Report
    broken: Report

    @property
    def as_expected(self) -> bool:
        return self.valid.ok and not self.broken.ok and set(EXPECTED_BROKEN) <= self.broken.fired()

    @property
    def verdict(self) -> str:
        if self.as_expected:
            return (
                f"demo: the valid drafter passes and the broken one fails with {', '.join(EXPECTED_BROKEN)} "
                f"(files in {self.root})"
            )
        return "demo: unexpected result; see the reports above"


def write_demo(root: Path) -> None:
    """Write target/, draft/ and draft-broken/ under ``root``."""
    build_target(
        root / "target",
        hidden_size=DEMO_SPEC.hidden_size,
        vocab_size=DEMO_SPEC.vocab_size,
        num_hidden_layers=TARGET_LAYERS,
        max_position_embeddings=8192,
    )
    for name, broken in (("draft", False), ("draft-broken", True)):
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        config = draft_config(DEMO_SPEC)
        tensors = draft_tensors(DEMO_SPEC)
        if broken:
            _, t2d = vocab_map(DEMO_SPEC)
            tensors["d2t"] = np.flatnonzero(t2d).astype(np.int64)  # absolute ids instead of offsets
            config["eagle_aux_hidden_state_layer_ids"] = [1, 7, TARGET_LAYERS + 2]
        write_json(folder / "config.json", config)
        write_safetensors(folder / "model.safetensors", tensors, metadata={"format": "pt"})


def run_demo(out: Path | None = None) -> DemoResult:
    """Build the example (in a temporary folder unless ``out``) and check both drafters."""
    if out is None:
        root = Path(tempfile.mkdtemp(prefix="specprobe-demo-"))
    else:
        root = out.expanduser()
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SpecprobeError(f"cannot create {root}: {exc.strerror or exc}") from None
    try:
        write_demo(root)
    except OSError as exc:
        raise SpecprobeError(f"cannot write the demo into {root}: {exc.strerror or exc}") from None
    target = str(root / "target")
    return DemoResult(
        root=root,
        valid=run_check(root / "draft", target=target),
        broken=run_check(root / "draft-broken", target=target),
    )
