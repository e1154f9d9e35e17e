"""The built-in example: a valid EAGLE-3 drafter, a broken copy and their target, checked side by side.

With the smoke extra installed (torch, transformers) the target and drafters are trained here on
the CPU (about a minute) and both drafters are also measured by the reference smoke test, so the
newcomer sees a static verdict and the acceptance it predicts. Without it, drafters with random
weights show the static checks alone. Folder names are the same in both modes.
"""

from __future__ import annotations

import importlib.util
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from specprobe.checkpoint.writer import write_safetensors
from specprobe.demo.fixtures import DraftSpec, build_target, draft_config, draft_tensors, vocab_map, write_json
from specprobe.findings import Report, SpecprobeError
from specprobe.pipeline.check import run_check

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
# The trained broken copy has a shuffled d2t: still in range, no longer increasing.
EXPECTED_BROKEN_TRAINED = ("VOCAB-D2T-ORDER",)
# Speculative tokens per step in the demo's smoke runs.
DEMO_K = 3


def can_train() -> bool:
    """True when the smoke extra (torch, transformers, tokenizers) is importable."""
    return all(importlib.util.find_spec(name) is not None for name in ("torch", "transformers", "tokenizers"))


def _mean_length(report: Report) -> float | None:
    """The mean acceptance length a smoke report measured, None when nothing was measured."""
    return report.measurement.mean_acceptance_length if report.measurement is not None else None


@dataclass
class DemoResult:
    root: Path
    valid: Report
    broken: Report
    trained: bool = False
    # Reference smoke runs of the trained drafters (draft, draft-broken), when the models were trained.
    smoke: dict[str, Report] = field(default_factory=dict)

    @property
    def expected_broken(self) -> tuple[str, ...]:
        return EXPECTED_BROKEN_TRAINED if self.trained else EXPECTED_BROKEN

    @property
    def as_expected(self) -> bool:
        static_ok = self.valid.ok and not self.broken.ok and set(self.expected_broken) <= self.broken.fired()
        if not self.trained:
            return static_ok
        good, bad = (_mean_length(self.smoke[name]) for name in ("draft", "draft-broken"))
        return static_ok and isinstance(good, float) and isinstance(bad, float) and good > bad

    @property
    def verdict(self) -> str:
        if not self.as_expected:
            return "demo: unexpected result; see the reports above"
        line = (
            f"demo: the valid drafter passes and the broken one fails with {', '.join(self.expected_broken)} "
            f"(files in {self.root})"
        )
        if self.trained:
            good, bad = (_mean_length(self.smoke[name]) for name in ("draft", "draft-broken"))
            line += (
                f"\ndemo: measured at K={DEMO_K} on the CPU: mean acceptance length {good:.2f} for draft, "
                f"{bad:.2f} for draft-broken (1.00 = every draft token rejected)"
            )
        elif not can_train():
            line += "\ndemo: install the smoke extra (pip install 'specprobe[smoke]') to train the models and measure"
        return line


# The folders a demo writes, trained or not.
DEMO_MODELS = ("target", "draft", "draft-broken")


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


def train_demo(root: Path) -> None:
    """Train target/, draft/ and draft-broken/ under ``root`` (the smoke extra is needed)."""
    # torch and transformers: the static demo (write_demo) must not load them.
    from specprobe.demo.train import build_demo_models  # noqa: PLC0415

    build_demo_models(root)


def smoke_demo(root: Path) -> dict[str, Report]:
    """Reference smoke runs of both trained drafters; the broken one is measured despite its errors."""
    # torch: as train_demo.
    from specprobe.smoke.runner import SmokeOptions, run_reference  # noqa: PLC0415

    target = str(root / "target")
    return {
        name: run_reference(
            SmokeOptions(
                target=target,
                draft=root / name,
                num_speculative_tokens=DEMO_K,
                max_prompts=8,
                max_new_tokens=32,
                force=name == "draft-broken",
                progress=False,
            )
        )
        for name in ("draft", "draft-broken")
    }


def run_demo(out: Path | None = None, *, train: bool | None = None, models: Path | None = None) -> DemoResult:
    """Build the example (in a temporary folder unless ``out``) and check both drafters.

    ``train`` None trains when the smoke extra is installed; False keeps the random-weight drafters.
    ``models`` names a folder of models trained earlier (target/, draft/, draft-broken/): they are
    copied instead of trained again (the folder itself is only read), and measured like trained ones.
    """
    if models is not None:
        missing = [name for name in DEMO_MODELS if not (models / name / "config.json").is_file()]
        if missing:
            raise SpecprobeError(f"--models {models}: no trained {', '.join(missing)} there (each needs config.json)")
        if not can_train():
            raise SpecprobeError("--models measures the trained models: install the smoke extra (specprobe[smoke])")
    trained = models is not None or (can_train() if train is None else train)
    if out is None:
        root = Path(tempfile.mkdtemp(prefix="specprobe-demo-"))
    else:
        root = out.expanduser()
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SpecprobeError(f"cannot create {root}: {exc.strerror or exc}") from None
    try:
        if models is not None:
            for name in DEMO_MODELS:
                shutil.copytree(models / name, root / name, dirs_exist_ok=True)
        elif trained:
            train_demo(root)
        else:
            write_demo(root)
    except OSError as exc:
        raise SpecprobeError(f"cannot write the demo into {root}: {exc.strerror or exc}") from None
    target = str(root / "target")
    return DemoResult(
        root=root,
        valid=run_check(root / "draft", target=target),
        broken=run_check(root / "draft-broken", target=target),
        trained=trained,
        smoke=smoke_demo(root) if trained else {},
    )
