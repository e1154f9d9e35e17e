"""Vocabulary-mapping family: d2t offsets and the t2d mask of reduced-vocabulary drafters.

``d2t[i]`` is an offset: draft id i becomes target id ``i + d2t[i]`` (vLLM ``arange + d2t``, SGLang
``hot_token_id = d2t + arange``); SpecForge builds it from the sorted used ids, so the targets are
in range and strictly increasing and ``t2d`` is true exactly at them.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from specprobe.checkpoint.safetensors_header import INTEGER_DTYPES
from specprobe.checkpoint.vocab import VocabMapRead, read_vocab_tensor
from specprobe.findings import Finding, Severity
from specprobe.rules import rule
from specprobe.rules.layout import SGLANG_EAGLE3_SRC, VLLM_EAGLE3_SRC
from specprobe.rules.shapes import draft_vocab_size

if TYPE_CHECKING:
    from specprobe.context import CheckContext

FAMILY = "vocab"
EAGLE_D2T = "https://github.com/SafeAILab/EAGLE/issues/222"

D2T_MISSING = rule(
    "VOCAB-D2T-MISSING",
    FAMILY,
    Severity.ERROR,
    "draft vocab < target vocab without d2t: vLLM zero-fills the map, draft id i becomes target id i",
    VLLM_EAGLE3_SRC,
    "https://github.com/verl-project/verl-SpeCo/pull/66",
)
D2T_DTYPE = rule(
    "VOCAB-D2T-DTYPE",
    FAMILY,
    Severity.ERROR,
    "d2t must be an integer tensor (int64)",
    VLLM_EAGLE3_SRC,
)
D2T_LENGTH = rule(
    "VOCAB-D2T-LENGTH",
    FAMILY,
    Severity.ERROR,
    "d2t must be 1-D of length draft_vocab_size",
    VLLM_EAGLE3_SRC,
)
D2T_RANGE = rule(
    "VOCAB-D2T-RANGE",
    FAMILY,
    Severity.ERROR,
    "every i + d2t[i] must be a target token id in [0, target vocab)",
    VLLM_EAGLE3_SRC,
    SGLANG_EAGLE3_SRC,
)
D2T_ORDER = rule(
    "VOCAB-D2T-ORDER",
    FAMILY,
    Severity.ERROR,
    "i + d2t[i] must be strictly increasing (sorted, distinct target ids)",
    EAGLE_D2T,
)
D2T_ZERO = rule(
    "VOCAB-D2T-ZERO",
    FAMILY,
    Severity.ERROR,
    "d2t is all zeros with a reduced vocabulary: draft id i becomes target id i, as with no d2t",
    EAGLE_D2T,
)
D2T_UNREADABLE = rule(
    "VOCAB-D2T-UNREADABLE",
    FAMILY,
    Severity.ERROR,
    "d2t/t2d data could not be read",
    VLLM_EAGLE3_SRC,
)
T2D_DTYPE = rule(
    "VOCAB-T2D-DTYPE",
    FAMILY,
    Severity.ERROR,
    "t2d must be a boolean mask over the target vocabulary",
    EAGLE_D2T,
)
T2D_LENGTH = rule(
    "VOCAB-T2D-LENGTH",
    FAMILY,
    Severity.ERROR,
    "t2d must be 1-D of length target vocab",
    EAGLE_D2T,
)
T2D_COUNT = rule(
    "VOCAB-T2D-COUNT",
    FAMILY,
    Severity.ERROR,
    "t2d must mark exactly draft_vocab_size ids",
    EAGLE_D2T,
)
T2D_MISMATCH = rule(
    "VOCAB-T2D-MISMATCH",
    FAMILY,
    Severity.ERROR,
    "t2d must be true exactly at the target ids d2t maps to",
    EAGLE_D2T,
)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def target_vocab_size(ctx: CheckContext) -> int | None:
    if ctx.target_config is not None and ctx.target_config.vocab_size is not None:
        return ctx.target_config.vocab_size
    return ctx.draft_config.vocab_size if ctx.draft_config is not None else None


def _check_d2t(
    d2t: VocabMapRead, draft_vocab: int | None, target_vocab: int | None
) -> tuple[list[Finding], list[int] | None]:
    findings: list[Finding] = []
    if d2t.dtype not in INTEGER_DTYPES:
        findings.append(
            D2T_DTYPE.finding(
                f"d2t is {d2t.dtype}, not an integer tensor", location=d2t.location, hint="store d2t as int64 offsets"
            )
        )
        return findings, None
    if len(d2t.shape) != 1 or (draft_vocab is not None and d2t.shape[0] != draft_vocab):
        findings.append(
            D2T_LENGTH.finding(
                f"d2t has shape {list(d2t.shape)}, expected [{draft_vocab}] (draft_vocab_size)",
                location=d2t.location,
                hint="d2t has one offset per draft token",
            )
        )
        return findings, None
    if d2t.error is not None or d2t.values is None:
        findings.append(D2T_UNREADABLE.finding(f"d2t: {d2t.error}", location=d2t.location))
        return findings, None
    offsets = d2t.values
    # map/compress keep these loops in C: a 32k d2t and a 160k t2d cost a few milliseconds.
    targets = list(map(operator.add, range(len(offsets)), offsets))
    if target_vocab is not None and targets and (min(targets) < 0 or max(targets) >= target_vocab):
        bad = sum(1 for t in targets if t < 0 or t >= target_vocab)
        absolute = min(offsets) >= 0 and max(offsets) < target_vocab and _strictly_increasing(offsets)
        findings.append(
            D2T_RANGE.finding(
                f"{bad} of {len(targets)} entries map outside [0, {target_vocab}) (i + d2t[i] spans "
                f"{min(targets)}..{max(targets)})"
                + ("; d2t holds absolute target ids, not offsets" if absolute else ""),
                location=d2t.location,
                hint="d2t[i] = target_id(i) - i (an offset), as SpecForge and EAGLE build it",
            )
        )
        return findings, None
    if not _strictly_increasing(targets):
        findings.append(
            D2T_ORDER.finding(
                "i + d2t[i] is not strictly increasing: target ids repeat or are out of order",
                location=d2t.location,
                hint="build d2t from the sorted, distinct target ids the draft vocabulary uses",
            )
        )
        return findings, targets
    if target_vocab is not None and draft_vocab is not None and draft_vocab < target_vocab and not any(offsets):
        findings.append(
            D2T_ZERO.finding(
                f"d2t is all zeros: draft ids map to target ids 0..{draft_vocab - 1}",
                location=d2t.location,
                hint="export the trained vocabulary mapping (d2t) with the drafter",
            )
        )
    return findings, targets


def _only_zero_one(values: Sequence[int]) -> bool:
    if isinstance(values, bytes):
        return not values.translate(None, b"\x00\x01")  # C-speed: delete 0 and 1, nothing may remain
    return not values or (min(values) >= 0 and max(values) <= 1)


def _strictly_increasing(values: Sequence[int]) -> bool:
    return all(map(operator.lt, values, itertools.islice(values, 1, None)))


def _check_t2d(
    t2d: VocabMapRead, targets: list[int] | None, draft_vocab: int | None, target_vocab: int | None
) -> Iterator[Finding]:
    if t2d.dtype != "BOOL" and t2d.dtype not in INTEGER_DTYPES:
        yield T2D_DTYPE.finding(f"t2d is {t2d.dtype}, not a boolean mask", location=t2d.location)
        return
    if len(t2d.shape) != 1 or (target_vocab is not None and t2d.shape[0] != target_vocab):
        yield T2D_LENGTH.finding(
            f"t2d has shape {list(t2d.shape)}, expected [{target_vocab}] (target vocab)", location=t2d.location
        )
        return
    if t2d.error is not None or t2d.values is None:
        yield D2T_UNREADABLE.finding(f"t2d: {t2d.error}", location=t2d.location)
        return
    if not _only_zero_one(t2d.values):
        yield T2D_DTYPE.finding("t2d holds values other than 0 and 1", location=t2d.location)
        return
    count = len(t2d.values) - t2d.values.count(0)
    if draft_vocab is not None and count != draft_vocab:
        yield T2D_COUNT.finding(
            f"t2d marks {count} target ids, draft_vocab_size is {draft_vocab}",
            location=t2d.location,
            hint="t2d[j] = (j is used by the draft vocabulary)",
        )
        return
    marked = list(itertools.compress(range(len(t2d.values)), t2d.values)) if targets is not None else []
    if targets is not None and marked != sorted(targets):
        differ = len(set(marked).symmetric_difference(targets))
        yield T2D_MISMATCH.finding(
            f"t2d and d2t disagree on {differ} target ids",
            location=t2d.location,
            hint="rebuild both from the same sorted list of used target ids",
        )


def run(ctx: CheckContext) -> Iterator[Finding]:
    if ctx.draft_format is None or ctx.draft_config is None:
        return
    draft_vocab = draft_vocab_size(ctx.draft)
    target_vocab = target_vocab_size(ctx)
    d2t = read_vocab_tensor(ctx.checkpoint, ctx.layout, "d2t")
    t2d = read_vocab_tensor(ctx.checkpoint, ctx.layout, "t2d")
    reduced = draft_vocab is not None and target_vocab is not None and draft_vocab < target_vocab
    targets: list[int] | None = None
    if d2t is None:
        if reduced:
            yield D2T_MISSING.finding(
                f"draft vocabulary {draft_vocab} < target vocabulary {target_vocab} and no d2t tensor: draft id i "
                "is taken as target id i",
                hint="save d2t (int64 offsets) in the safetensors file with the drafter",
            )
    else:
        findings, targets = _check_d2t(d2t, draft_vocab, target_vocab)
        yield from findings
    if t2d is not None and reduced:
        # With a full vocabulary engines ignore t2d (official full-vocab heads ship it zero-filled).
        yield from _check_t2d(t2d, targets, draft_vocab, target_vocab)
