"""Lossless up to rounding: a divergence at a constructed numerical near-tie of the target's top two
logits is info with its position, margin and tolerance; one at a confident position is SMOKE-NOT-LOSSLESS.

The near-tie is built into a real trained target: the output-head row of an unused token is made a
copy of the row of the token greedy decoding picks at one position, so both logits are equal there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from specprobe.findings import Measurement
from specprobe.smoke.runner import measurement_findings

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow


def _tied_target(demo_models: dict[str, Path]) -> tuple[object, list[int], list[int], int, int]:
    from specprobe.smoke.prompts import encode_prompts, load_prompts
    from specprobe.smoke.reference import greedy_generate, load_target

    target = load_target(str(demo_models["target"]), device="cpu", dtype=torch.float32)
    prompt = encode_prompts(target.tokenizer, load_prompts(None, limit=1))[0]
    greedy = greedy_generate(target, [prompt], 24, device="cpu").tokens[0]
    position = 6
    chosen = greedy[position]
    unused = next(t for t in range(target.vocab_size - 1, 0, -1) if t not in greedy and t not in prompt)
    head = target.model.get_output_embeddings().weight
    with torch.no_grad():
        head[unused] = head[chosen]
    tied = greedy_generate(target, [prompt], 24, device="cpu").tokens[0]
    assert tied[:position] == greedy[:position]
    return target, prompt, tied, position, unused if tied[position] == chosen else chosen


def test_divergence_at_a_near_tie_is_info_and_at_a_confident_position_an_error(demo_models: dict[str, Path]) -> None:
    from specprobe.smoke.reference import classify_divergence

    target, prompt, greedy, position, other = _tied_target(demo_models)
    speculative = [*greedy[:position], other, *greedy[position + 1 :]]
    tie = classify_divergence(target, prompt, greedy, speculative, device="cpu")  # type: ignore[arg-type]
    assert tie is not None and tie.position == position and tie.near_tie
    assert tie.margin <= tie.tolerance and tie.tolerance > 0

    # The same swap two tokens later, where the target is confident: a real verification error.
    logits = target.model(input_ids=torch.tensor([[*prompt, *greedy[: position + 2]]])).logits[0, -1]  # type: ignore[attr-defined]
    least = int(logits.argmin())
    wrong = [*greedy[: position + 2], least, *greedy[position + 3 :]]
    confident = classify_divergence(target, prompt, greedy, wrong, device="cpu")  # type: ignore[arg-type]
    assert confident is not None and not confident.near_tie and confident.margin > 100 * confident.tolerance

    def entry(d: object, prompt_id: str) -> dict[str, object]:
        return {"prompt": prompt_id, **{k: getattr(d, k) for k in ("position", "margin", "tolerance")}}

    only_tie = {"num_speculative_tokens": 3, "mean_acceptance_length": 2.0, "lossless": True,
                "near_tie_divergences": [entry(tie, "en-summary")], "confident_divergences": []}  # fmt: skip
    rules = {f.rule: f for f in measurement_findings(
        Measurement.from_figures(only_tie), min_acceptance_length=None, label="reference")}  # fmt: skip
    assert "SMOKE-NOT-LOSSLESS" not in rules
    tie_message = rules["SMOKE-NEAR-TIE"].message
    assert f"new token {position}" in tie_message and "en-summary" in tie_message
    broken = {**only_tie, "lossless": False, "lossless_prompts": "23/24"}
    broken["confident_divergences"] = [entry(confident, "p")]
    rules = {f.rule: f for f in measurement_findings(
        Measurement.from_figures(broken), min_acceptance_length=None, label="reference")}  # fmt: skip
    assert rules["SMOKE-NOT-LOSSLESS"].severity.value == "error"
    assert f"new token {position + 2}" in rules["SMOKE-NOT-LOSSLESS"].message


def test_tolerance_follows_dtype_and_magnitude() -> None:
    from specprobe.smoke.reference import rounding_tolerance

    fp32 = rounding_tolerance(torch.float32, 20.0, hidden_size=768, num_layers=12)
    assert fp32 < rounding_tolerance(torch.bfloat16, 20.0, hidden_size=768, num_layers=12)
    assert fp32 < rounding_tolerance(torch.float32, 40.0, hidden_size=768, num_layers=12)
    # A float32 logit of 20 may move by about a thousandth, far below a confident margin of 1.
    assert 1e-4 < fp32 < 1e-2


def test_a_speedup_without_accepted_tokens_is_timing_noise() -> None:
    measured = Measurement(num_speculative_tokens=3, mean_acceptance_length=1.0, accepted_tokens=0, speedup=4.58)
    rules = {f.rule: f for f in measurement_findings(measured, min_acceptance_length=None, label="reference")}
    assert "SMOKE-TIMING-NOISE" in rules and "4.58x" in rules["SMOKE-TIMING-NOISE"].message
    assert measured.speedup is None and measured.details["timing_noise_speedup"] == 4.58
    # The JSON keeps the documented keys: a null speedup and the ratio that was noise.
    written = measured.to_json_dict()
    assert written["speedup"] is None and written["timing_noise_speedup"] == 4.58
    assert "speed-up" not in rules["SMOKE-MEASURED"].message
