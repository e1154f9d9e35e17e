"""The proof a fixed copy carries: it passes `check` for the release, every copied tensor is
byte-identical to the source (sha256 of both, read independently), and, where torch and a small local
target are at hand, the reference backend's draft logits of the original and the copy are identical.

``exact_proof`` is the hook for the engine's own load of the copy (``specprobe.engines.exact``): it is
called when that module is importable and says "exact not available" otherwise.
"""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specprobe.checkpoint.folder import load_checkpoint
from specprobe.checkpoint.layout import detect_layout
from specprobe.checkpoint.rewrite import sha256_range
from specprobe.checkpoint.tokenizer_identity import ANOTHER, SAME
from specprobe.findings import Finding, Report, Severity
from specprobe.fix.apply import Written
from specprobe.fix.model import FixPlan, TargetFiles
from specprobe.fix.plan import tensor_digest, tokenizer_identity
from specprobe.pipeline.check import build_context, run_check
from specprobe.rules import fix as rules
from specprobe.rules.exact import check_exact

# The reference comparison loads the target's embedding and both drafters in float32: only for targets
# whose weight files stay below this size (tiny test and demo models, not production targets).
MAX_REFERENCE_TARGET_BYTES = 2 * 1024**3


@dataclass
class TensorProof:
    name: str
    origin: str
    source_sha256: str
    copy_sha256: str

    @property
    def identical(self) -> bool:
        return self.source_sha256 == self.copy_sha256


@dataclass
class Proof:
    """Everything the fix report proves about the copy."""

    check_errors: list[Finding] = field(default_factory=list)
    check_warnings: int = 0
    tensors: list[TensorProof] = field(default_factory=list)
    logits: dict[str, Any] | None = None
    exact: dict[str, Any] | None = None
    tokenizer: dict[str, Any] | None = None

    @property
    def tokenizer_refuted(self) -> bool:
        """The copy's own files show another tokenizer, or the fix changed vocab_size and they no longer show
        one tokenizer: the copy would propose ids that mean other tokens."""
        return self.tokenizer is not None and not self.tokenizer.get("ok", True)

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "check": {
                "errors": [f.to_json_dict() for f in self.check_errors],
                "warnings": self.check_warnings,
                "ok": not self.check_errors,
            },
            "tensors": [
                {"name": t.name, "origin": t.origin, "source_sha256": t.source_sha256, "copy_sha256": t.copy_sha256,
                 "identical": t.identical}
                for t in self.tensors
            ],
            "logits": self.logits,
            "exact": self.exact,
            "tokenizer": self.tokenizer,
        }


def check_copy(folder: Path, plan: FixPlan) -> Report:
    """`check` of the copy for the release the plan is for (the same library call `specprobe check` makes)."""
    return run_check(folder, target=plan.target.spec, engine=plan.engine_label, method="eagle3")


def tokenizer_proof(folder: Path, plan: FixPlan) -> dict[str, Any]:
    """The copy's tokenizer against the target's, read again from the copy's own files (config.json, the
    tokenizer files copied beside it, its t2d): the check that fails for the class a vocab_size rewrite
    repairs when the drafter was trained with another tokenizer. A copy whose vocab_size was rewritten must
    show one tokenizer; any copy must not show another."""
    copy = load_checkpoint(folder)
    layout = detect_layout(copy, copy.config_raw)
    found = tokenizer_identity(folder, copy.config_raw or {}, layout, plan.target)
    resized = any(change.rule is rules.DRAFT_VOCAB and change.what == "vocab_size" for change in plan.changes)
    ok = found.verdict != ANOTHER and (found.verdict == SAME or not resized)
    return {"verdict": found.verdict, "evidence": found.evidence, "vocab_size_rewritten": resized, "ok": ok}


def checksums(plan: FixPlan, written: Written) -> list[TensorProof]:
    """sha256 of each tensor's bytes in the source (or of the derived data) and in the copy.

    The two sides are read independently, on two threads (hashlib releases the GIL on large buffers,
    so the two passes overlap on a second core)."""
    def copy_digest(name: str) -> str:
        file, begin, end = written.offsets[name]
        return sha256_range(written.folder / file, begin, end - begin)

    with ThreadPoolExecutor(max_workers=2) as pool:
        sources = pool.map(tensor_digest, plan.tensors)
        copies = pool.map(copy_digest, [t.name for t in plan.tensors])
        return [
            TensorProof(tensor.name, tensor.origin, source, copied)
            for tensor, source, copied in zip(plan.tensors, sources, copies, strict=True)
        ]


def exact_proof(folder: Path, plan: FixPlan) -> dict[str, Any]:
    """The engine's own load of the copy: ``specprobe.rules.exact.check_exact(ctx, report)`` on the
    copy's check context; where the release's interpreter is not here, its summary says the verdict is static.

    ``exact`` is whether the release's own code judged the copy (``verdict`` "exact" in the module's
    summary) rather than the static rules standing in for it."""
    report = Report(command="check")
    try:
        check_exact(build_context(folder, target=plan.target.spec, engine=plan.engine_label, method="eagle3"), report)
    except Exception as exc:  # the engine's interpreter may be absent or crash: the proof says so
        return {"available": False, "reason": f"exact not available: {type(exc).__name__}: {exc}"}
    summary = report.extra.get("exact") or []
    judged = [entry for entry in summary if isinstance(entry, dict) and entry.get("verdict") == "exact"]
    if not judged:
        why = next((str(e.get("why")) for e in summary if isinstance(e, dict) and e.get("why")), "no reason given")
        return {"available": False, "reason": f"exact not available for {plan.engine_label}: {why}"}
    errors = [f.to_json_dict() for f in report.findings if f.severity is Severity.ERROR]
    return {"available": True, "ok": not errors, "errors": errors, "summary": summary}


def _target_small(target: TargetFiles) -> bool:
    ckpt = target.checkpoint
    if ckpt is None or target.folder is None:
        return False
    return sum(h.file_size for h in ckpt.headers.values()) <= MAX_REFERENCE_TARGET_BYTES


def reference_logits(plan: FixPlan, folder: Path, *, seed: int = 0, positions: int = 8) -> dict[str, Any]:
    """Draft logits of the original and the copy from the reference backend on the same random inputs
    (aux hidden states, tokens), in float32: ``max_abs_diff`` 0 means the same model."""
    if importlib.util.find_spec("torch") is None or importlib.util.find_spec("safetensors") is None:
        return {"compared": False, "reason": "torch is not installed (pip install 'specprobe[smoke]')"}
    target = plan.target
    if not _target_small(target):
        return {"compared": False, "reason": "the target is not a local folder of safetensors weights under 2 GiB"}
    # torch is optional (the smoke extra) and costs seconds: imported only once it is known to be there and
    # the target small enough to compare; fix without it still writes and checks the copy.
    import torch  # noqa: PLC0415

    from specprobe.smoke.eagle3 import DrafterFormatError, DraftKVCache, load_drafter  # noqa: PLC0415

    embed = _target_embedding(target)
    if embed is None:
        return {"compared": False, "reason": "the target's safetensors hold no embed_tokens.weight"}
    config = target.config
    layers, hidden, vocab = config.num_hidden_layers, config.hidden_size, config.vocab_size
    if not (layers and hidden and vocab):
        return {"compared": False, "reason": "the target's config.json lacks num_hidden_layers/hidden_size/vocab_size"}
    results: dict[str, Any] = {"compared": False}
    drafters = {}
    for label, path in (("original", plan.draft_dir), ("copy", folder)):
        try:
            drafters[label] = load_drafter(
                path,
                target_num_layers=layers,
                target_hidden_size=hidden,
                target_vocab_size=vocab,
                target_embed_tokens=embed,
            ).float().eval()
        except (DrafterFormatError, OSError, ValueError, RuntimeError) as exc:
            results["reason"] = f"the reference backend cannot read the {label}: {exc}"
            return results
    original, fixed = drafters["original"], drafters["copy"]
    generator = torch.Generator().manual_seed(seed)
    n_aux = len(original.cfg.aux_layer_ids)
    aux = torch.randn(1, positions, n_aux * original.cfg.target_hidden_size, generator=generator)
    tokens = torch.randint(0, vocab, (1, positions), generator=generator)
    place = torch.arange(positions)[None]
    valid = torch.ones(1, positions, dtype=torch.bool)
    outputs = {}
    with torch.no_grad():
        for label, drafter in (("original", original), ("copy", fixed)):
            hidden_in = drafter.combine_aux(aux)
            logits, _ = drafter.step(tokens, hidden_in, place, DraftKVCache(), valid)
            outputs[label] = logits
    diff = float((outputs["original"] - outputs["copy"]).abs().max())
    remapped = int((original.d2t != fixed.d2t).sum())
    results.update(
        {
            "compared": True,
            "dtype": "float32",
            "positions": positions,
            "max_abs_diff": diff,
            "identical": diff == 0.0,
            "d2t_entries_changed": remapped,
        }
    )
    return results


def _target_embedding(target: TargetFiles) -> Any:
    # torch is optional: see reference_logits, the only caller.
    import torch  # noqa: PLC0415
    from safetensors import safe_open  # noqa: PLC0415

    ckpt = target.checkpoint
    assert ckpt is not None
    for name in ("model.embed_tokens.weight", "embed_tokens.weight", "model.language_model.embed_tokens.weight"):
        info = ckpt.tensors.get(name)
        if info is None:
            continue
        with safe_open(str(ckpt.path_of(info)), framework="pt") as handle:
            weight = handle.get_tensor(name).float()
        embedding = torch.nn.Embedding(weight.shape[0], weight.shape[1])
        embedding.weight.data.copy_(weight)
        embedding.weight.requires_grad_(False)
        return embedding
    return None
