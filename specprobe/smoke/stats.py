"""Acceptance statistics in the engines' own terms, with a 95% confidence interval over prompts.

Definitions follow vLLM's spec-decode metrics: a *draft* is one verification round of K proposed
tokens; acceptance rate = accepted / (drafts * K); mean acceptance length = 1 + accepted / drafts
(the bonus token counts); per-position rate i = rounds whose first i+1 drafts were all accepted /
drafts.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

EVIDENCE_VLLM_METRICS = "https://github.com/vllm-project/vllm/blob/main/vllm/v1/spec_decode/metrics.py"

# Two-sided 97.5% quantiles of Student's t for 1..30 degrees of freedom; 1.96 beyond.
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t_quantile_975(degrees_of_freedom: int) -> float:
    if degrees_of_freedom < 1:
        return math.nan
    if degrees_of_freedom <= len(_T975):
        return _T975[degrees_of_freedom - 1]
    return 1.96


def mean_ci95(values: Sequence[float]) -> tuple[float, float, float]:
    """Mean and the t-based 95% interval of the mean; a single value has a zero-width interval."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan, math.nan
    mean = sum(values) / n
    if n == 1:
        return mean, mean, mean
    variance = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = t_quantile_975(n - 1) * math.sqrt(variance / n)
    return mean, mean - half, mean + half


@dataclass(frozen=True)
class AcceptanceStats:
    """Counts summed over prompts, with per-prompt acceptance lengths for the interval."""

    num_speculative_tokens: int
    drafts: int
    draft_tokens: int
    accepted: int
    accepted_per_pos: tuple[int, ...]
    per_prompt_acceptance_length: tuple[float, ...] = ()

    @property
    def acceptance_rate(self) -> float:
        return self.accepted / self.draft_tokens if self.draft_tokens else math.nan

    @property
    def mean_acceptance_length(self) -> float:
        return 1.0 + self.accepted / self.drafts if self.drafts else math.nan

    @property
    def per_position(self) -> list[float]:
        return [count / self.drafts if self.drafts else math.nan for count in self.accepted_per_pos]

    @property
    def ci95(self) -> list[float]:
        """95% interval over prompts of the per-prompt mean acceptance length (empty when not per prompt).

        It brackets the mean of per-prompt figures; the pooled figure weights prompts by their drafts.
        """
        if not self.per_prompt_acceptance_length:
            return []
        _, low, high = mean_ci95(self.per_prompt_acceptance_length)
        return [low, high]


def from_counts(
    num_speculative_tokens: int,
    drafts: Sequence[int],
    accepted: Sequence[int],
    accepted_per_pos: Sequence[Sequence[int]],
) -> AcceptanceStats:
    """Sum per-prompt counts; prompts that never drafted do not enter the interval."""
    k = num_speculative_tokens
    per_pos = tuple(sum(row[i] for row in accepted_per_pos) for i in range(k))
    per_prompt = tuple(1.0 + a / d for a, d in zip(accepted, drafts, strict=True) if d > 0)
    return AcceptanceStats(
        num_speculative_tokens=k,
        drafts=sum(drafts),
        draft_tokens=sum(drafts) * k,
        accepted=sum(accepted),
        accepted_per_pos=per_pos,
        per_prompt_acceptance_length=per_prompt,
    )


def tokens_per_second(tokens: int, seconds: float) -> float:
    return tokens / seconds if seconds > 0 else math.nan


def finite(value: float) -> float | None:
    """JSON has no NaN: unknown figures are null."""
    return None if math.isnan(value) or math.isinf(value) else round(value, 6)


def acceptance_extra(stats: AcceptanceStats) -> dict[str, Any]:
    """The fixed smoke JSON keys that describe acceptance."""
    return {
        "acceptance_rate": finite(stats.acceptance_rate),
        "mean_acceptance_length": finite(stats.mean_acceptance_length),
        "per_position": [finite(v) for v in stats.per_position],
        "drafts": stats.drafts,
        "draft_tokens": stats.draft_tokens,
        "accepted_tokens": stats.accepted,
        "num_speculative_tokens": stats.num_speculative_tokens,
        "ci95": [finite(v) for v in stats.ci95],
    }
