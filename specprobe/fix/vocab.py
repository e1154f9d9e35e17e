"""Rebuilding a drafter's vocabulary map (d2t offsets, t2d mask) from what its files really hold.

``d2t[i]`` is an offset (target id = i + d2t[i]) over the sorted target ids the draft vocabulary uses
and ``t2d[j]`` is true exactly at those ids (SpecForge and EAGLE build both that way), so either one
determines the other. What a d2t holds is classified first (offsets, absolute ids, a permutation, zeros,
unreadable); the repair then uses the half that is consistent, and says what is missing when neither is.
"""

from __future__ import annotations

import itertools
import operator
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class D2tKind(StrEnum):
    """What a stored d2t turned out to hold."""

    OFFSETS = "offsets"  # in range, strictly increasing: what engines expect
    ABSOLUTE = "absolute ids"  # the target ids themselves instead of offsets
    SHUFFLED = "shuffled"  # in range, but target ids out of order or repeated
    ZEROS = "all zeros"  # the identity map with a reduced vocabulary
    WRONG_LENGTH = "wrong length"
    OUT_OF_RANGE = "out of range"
    UNREADABLE = "unreadable"
    ABSENT = "absent"


@dataclass(frozen=True)
class VocabInput:
    """The map as stored: d2t / t2d values (None when absent or unreadable) and their dtypes."""

    draft_vocab: int
    target_vocab: int
    d2t: Sequence[int] | None
    d2t_dtype: str | None
    t2d: Sequence[int] | None
    t2d_dtype: str | None
    d2t_present: bool
    t2d_present: bool


@dataclass(frozen=True)
class VocabRepair:
    """The map to write (sorted used target ids), what changed and why; ``missing`` when it cannot be rebuilt."""

    used: tuple[int, ...] | None
    d2t_kind: D2tKind
    write_d2t: bool
    write_t2d: bool
    why: str
    missing: str | None = None


def _increasing(values: Sequence[int]) -> bool:
    return all(map(operator.lt, values, itertools.islice(values, 1, None)))


def classify_d2t(values: Sequence[int] | None, present: bool, draft_vocab: int, target_vocab: int) -> D2tKind:
    """What ``values`` (a stored d2t) holds, judged by the rules engines and trainers follow."""
    if not present:
        return D2tKind.ABSENT
    if values is None:
        return D2tKind.UNREADABLE
    if len(values) != draft_vocab:
        return D2tKind.WRONG_LENGTH
    targets = list(map(operator.add, range(len(values)), values))
    in_range = not targets or (min(targets) >= 0 and max(targets) < target_vocab)
    if in_range and _increasing(targets):
        return D2tKind.ZEROS if draft_vocab < target_vocab and not any(values) else D2tKind.OFFSETS
    if values and min(values) >= 0 and max(values) < target_vocab and _increasing(values):
        return D2tKind.ABSOLUTE
    return D2tKind.SHUFFLED if in_range else D2tKind.OUT_OF_RANGE


def t2d_used(values: Sequence[int] | None, target_vocab: int, draft_vocab: int) -> tuple[int, ...] | None:
    """The target ids a t2d marks, when it is a usable 0/1 mask of the right length and count."""
    if values is None or len(values) != target_vocab:
        return None
    if any(v not in (0, 1) for v in (values if not isinstance(values, bytes) else set(values))):
        return None
    used = tuple(itertools.compress(range(len(values)), values))
    return used if len(used) == draft_vocab else None


def repair(given: VocabInput) -> VocabRepair:
    """Decide the map to write: keep a good d2t (fixing only its dtype and t2d), convert absolute ids,
    rebuild a broken or absent d2t from a consistent t2d, or name what is missing."""
    kind = classify_d2t(given.d2t, given.d2t_present, given.draft_vocab, given.target_vocab)
    from_t2d = t2d_used(given.t2d, given.target_vocab, given.draft_vocab) if given.t2d_present else None
    t2d_ok_dtype = given.t2d_dtype == "BOOL"
    d2t_ok_dtype = given.d2t_dtype == "I64"
    if kind is D2tKind.OFFSETS:
        assert given.d2t is not None
        used = tuple(map(operator.add, range(len(given.d2t)), given.d2t))
        t2d_agrees = from_t2d == used
        write_t2d = not t2d_agrees or not t2d_ok_dtype
        why = "d2t holds valid offsets"
        if given.t2d_present and not t2d_agrees:
            why += "; t2d disagrees with it and was rebuilt from d2t (engines read d2t, not t2d)"
        elif not given.t2d_present:
            why += "; t2d was added from it"
        elif not t2d_ok_dtype:
            why += f"; t2d stored as {given.t2d_dtype} was rewritten as bool"
        if not d2t_ok_dtype:
            why += f"; d2t stored as {given.d2t_dtype} was rewritten as int64"
        return VocabRepair(used, kind, not d2t_ok_dtype, write_t2d, why)
    if kind is D2tKind.ABSOLUTE:
        assert given.d2t is not None
        used = tuple(int(v) for v in given.d2t)
        if from_t2d is not None and from_t2d != used:
            return VocabRepair(
                None, kind, False, False, "",
                missing="d2t holds absolute target ids and t2d marks other ids: which of the two the head was "
                "trained with is not in the files; the training run's vocabulary map is needed",
            )
        why = "d2t held absolute target ids; converted to offsets d2t[i] = id[i] - i" + (
            " (t2d marks the same ids)" if from_t2d is not None else ""
        )
        return VocabRepair(used, kind, True, from_t2d is None or not t2d_ok_dtype, why)
    # d2t is unusable: only a consistent t2d can restore it.
    if from_t2d is not None:
        if kind is D2tKind.SHUFFLED and given.d2t is not None:
            targets = set(map(operator.add, range(len(given.d2t)), given.d2t))
            if targets != set(from_t2d):
                return VocabRepair(
                    None, kind, False, False, "",
                    missing="d2t is out of order and maps to other target ids than t2d marks: the order of the "
                    "draft vocabulary (which lm_head row is which token) is not in the files",
                )
        why = (
            f"d2t is {kind.value}; rebuilt from t2d, whose {len(from_t2d)} marked target ids are the draft "
            "vocabulary in the sorted order trainers use (d2t[i] = id[i] - i)"
        )
        return VocabRepair(from_t2d, kind, True, not t2d_ok_dtype, why)
    t2d_state = "absent" if not given.t2d_present else "not a usable mask of the draft vocabulary"
    return VocabRepair(
        None, kind, False, False, "",
        missing=f"d2t is {kind.value} and t2d is {t2d_state}: the draft-to-target vocabulary map (the sorted "
        f"{given.draft_vocab} target ids the draft vocabulary was trained on) is not in the drafter's files; "
        "supply the training run's d2t or t2d",
    )


def d2t_bytes(used: Sequence[int]) -> bytes:
    """int64 little-endian offsets used[i] - i."""
    return struct.pack(f"<{len(used)}q", *(u - i for i, u in enumerate(used)))


def t2d_bytes(used: Sequence[int], target_vocab: int) -> bytes:
    """A bool mask over the target vocabulary, true at ``used``."""
    mask = bytearray(target_vocab)
    for index in used:
        mask[index] = 1
    return bytes(mask)
