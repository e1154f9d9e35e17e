"""Tokenizer family: whether a drafter that proposes tokens was trained with its target's tokenizer.

Every drafter with weights (EAGLE, EAGLE-3, draft models, block drafters, Medusa, MLP speculators) proposes
ids the target verifies as its own. Another tokenizer is an error whatever the sizes say: its ids mean other
tokens and acceptance is near zero; no rewrite of the files repairs it. A vocabulary of another size that is
a padding of the same tokenizer is said as information. The evidence is read by
``specprobe.checkpoint.tokenizer_identity``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from specprobe.checkpoint.forms import detect_form, proposes_tokens
from specprobe.checkpoint.tokenizer_identity import ANOTHER, SAME, UNKNOWN, Identity, compare, facts_of
from specprobe.compat.engine_facts import source_url
from specprobe.findings import Finding, Severity
from specprobe.rules import rule

if TYPE_CHECKING:
    from specprobe.context import CheckContext

FAMILY = "tokenizer"
SGLANG_STANDALONE = source_url("sglang", "0.5.23", "sglang/srt/speculative/standalone_worker_v2.py")
VLLM_DRAFT_VOCAB = source_url("vllm", "0.33.0", "vllm/config/speculative.py")

MISMATCH = rule(
    "TOKENIZER-MISMATCH",
    FAMILY,
    Severity.ERROR,
    "the drafter was trained with another tokenizer than the target's (tokenizer.json vocabularies, bos_token_id, "
    "or special ids outside the other vocabulary): every draft id means another token of the target",
    SGLANG_STANDALONE,
    VLLM_DRAFT_VOCAB,
)
PADDED = rule(
    "TOKENIZER-PADDED",
    FAMILY,
    Severity.INFO,
    "the drafter's vocab_size differs from the target's but the files show one tokenizer (a padded vocabulary)",
    SGLANG_STANDALONE,
)

__all__ = ["MISMATCH", "PADDED", "RETRAIN", "UNKNOWN", "identity", "run"]

RETRAIN = "no rewrite makes this drafter propose the target's tokens: it must be retrained with the target's tokenizer"


def _map_size(ctx: CheckContext) -> int | None:
    t2d = ctx.layout.get("t2d")
    return t2d.shape[0] if t2d is not None and len(t2d.shape) == 1 else None


def identity(ctx: CheckContext) -> Identity | None:
    """The tokenizer verdict for this drafter and target; None without a target or a drafter config."""
    if ctx.target_config is None or ctx.draft_config is None:
        return None
    # Both sides through the files located for this run: a hub repository is read by its reader, in budget.
    draft = facts_of("drafter", ctx.draft_raw, ctx.checkpoint.files or ctx.draft_dir, ctx.draft_config.vocab_size)
    target_files = ctx.target_files if ctx.target_files is not None else ctx.target_spec
    target = facts_of("target", ctx.target_config.raw, target_files, ctx.target_config.vocab_size)
    return compare(draft, target, map_size=_map_size(ctx))


def run(ctx: CheckContext) -> Iterator[Finding]:
    if not ctx.layout.tensors or not proposes_tokens(detect_form(ctx.layout, ctx.draft_raw).form):
        return
    found = identity(ctx)
    if found is None:
        return
    if found.verdict == ANOTHER:
        yield MISMATCH.finding(
            f"the drafter and the target have different tokenizers: {found.evidence}",
            location="config.json",
            hint=RETRAIN,
        )
    elif found.verdict == SAME and found.sizes_differ:
        draft, target = found.sizes
        yield PADDED.finding(
            f"vocab_size {draft} (drafter) vs {target} (target), one tokenizer: {found.evidence}",
            location="config.json:vocab_size",
            key="config.json:vocab_size",
        )
