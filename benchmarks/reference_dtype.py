"""Does the reference smoke backend run as fast in bfloat16 as in float32?

Loads a demo target and drafter (``--models DIR`` with ``target/`` and ``draft/``, as written by
``python -m specprobe.demo.train``; ``--quick-plan gpu`` writes barely trained models of the GPU plan's
shapes first, enough for timing), then times, in one process and side by side, target-only greedy
decoding and greedy chain speculative decoding (K=3) in float32 and bfloat16, at batch 1 and at the
batch of all prompts: the first run after the warm-up `specprobe smoke` does, and the median of
``--repeats`` runs. ``--attention fixed,cudnn`` runs both with the attention kernels the backend decodes
with and with cuDNN's per-shape kernel allowed (the earlier behaviour); ``--profile`` prints the
heaviest operators of one bfloat16 run.

    python benchmarks/reference_dtype.py --models DIR --device cuda [--json OUT.json]

Goal: bfloat16 tokens/s >= float32 tokens/s for both loops (on a GPU; on a CPU bfloat16 is emulated).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch.nn.attention import SDPBackend

from specprobe.smoke import eagle3
from specprobe.smoke.prompts import encode_prompts, load_prompts
from specprobe.smoke.reference import (
    greedy_generate,
    load_reference_drafter,
    load_target,
    resolve_dtype,
    speculative_generate,
)


@contextlib.contextmanager
def attention_kernels(name: str) -> Iterator[None]:
    """``fixed``: the kernels the reference backend decodes with; ``cudnn``: every kernel torch has, cuDNN's
    per-shape one first on Hopper (what the backend did before it chose its decoding kernels)."""
    saved = eagle3.DECODE_ATTENTION_BACKENDS
    if name == "cudnn":
        eagle3.DECODE_ATTENTION_BACKENDS = [SDPBackend.CUDNN_ATTENTION, *saved]
    try:
        yield
    finally:
        eagle3.DECODE_ATTENTION_BACKENDS = saved


def _rates(run: Callable[[], Any], repeats: int) -> tuple[float, float]:
    """Tokens/s of the first run (what `specprobe smoke --timing-repeats 1` reports) and the median of all."""
    rates = []
    for _ in range(repeats):
        result = run()
        rates.append(sum(len(t) for t in result.tokens) / result.seconds)
    return rates[0], statistics.median(rates)


def _loops(
    target: Any, drafter: Any, prompts: list[list[int]], new_tokens: int, *, device: str, repeats: int
) -> dict[str, float]:
    greedy_first, greedy = _rates(lambda: greedy_generate(target, prompts, new_tokens, device=device), repeats)
    spec_first, spec = _rates(
        lambda: speculative_generate(target, drafter, prompts, new_tokens, 3, device=device), repeats
    )
    return {
        "target_only_tokens_per_s": round(greedy, 1),
        "speculative_k3_tokens_per_s": round(spec, 1),
        "target_only_first_run_tokens_per_s": round(greedy_first, 1),
        "speculative_k3_first_run_tokens_per_s": round(spec_first, 1),
    }


def measure(
    models: Path, *, device: str, new_tokens: int, batches: list[int], repeats: int, attention: list[str], profile: bool
) -> list[dict[str, Any]]:
    if device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    rows: list[dict[str, Any]] = []
    for dtype_name in ("float32", "bfloat16"):
        dtype = resolve_dtype(dtype_name)
        target = load_target(str(models / "target"), device=device, dtype=dtype)
        drafter = load_reference_drafter(models / "draft", target, device=device, dtype=dtype)
        encoded = encode_prompts(target.tokenizer, load_prompts())
        for kernels in attention:
            with attention_kernels(kernels):
                # The warm-up `specprobe smoke` does: one short prompt, four tokens.
                greedy_generate(target, encoded[:1], 4, device=device)
                speculative_generate(target, drafter, encoded[:1], 4, 3, device=device)
                for batch in batches:
                    row = {"dtype": dtype_name, "attention": kernels, "batch": len(encoded[:batch])}
                    row.update(_loops(target, drafter, encoded[:batch], new_tokens, device=device, repeats=repeats))
                    rows.append(row)
                    print(json.dumps(row), flush=True)
        if profile and dtype_name == "bfloat16":
            from torch.profiler import ProfilerActivity
            from torch.profiler import profile as torch_profile

            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
            with torch_profile(activities=activities) as prof:
                greedy_generate(target, encoded[:1], 16, device=device)
            print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=15), flush=True)
        del target, drafter
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, required=True)
    parser.add_argument("--quick-plan", choices=("tiny", "gpu"), help="write barely trained models of this plan first")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--batches", default="1,24")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--attention", default="fixed,cudnn", help="comma list of fixed, cudnn")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if args.quick_plan:
        from specprobe.demo.train import PLANS, build_pair

        plan = replace(
            PLANS[args.quick_plan],
            target_steps=2,
            draft_steps=2,
            generated_sequences=16,
            corpus_chars=min(PLANS[args.quick_plan].corpus_chars, 1_000_000),
        )
        build_pair(
            plan,
            args.models / "target",
            args.models / "draft",
            device=args.device,
            seed=0,
            log=lambda m: print(m, file=sys.stderr),
        )
    rows = measure(
        args.models,
        device=args.device,
        new_tokens=args.new_tokens,
        batches=[int(b) for b in args.batches.split(",")],
        repeats=args.repeats,
        attention=args.attention.split(","),
        profile=args.profile,
    )
    print("tokens/s, median of the repeats (first run in brackets)")
    print(f"{'dtype':<9} {'attention':<10} {'batch':>5} {'target-only':>22} {'K=3':>22}")
    for row in rows:
        greedy = f"{row['target_only_tokens_per_s']} ({row['target_only_first_run_tokens_per_s']})"
        spec = f"{row['speculative_k3_tokens_per_s']} ({row['speculative_k3_first_run_tokens_per_s']})"
        print(f"{row['dtype']:<9} {row['attention']:<10} {row['batch']:>5} {greedy:>22} {spec:>22}")
    by = {(r["attention"], r["batch"], r["dtype"]): r for r in rows}
    for (kernels, batch, dtype), row in by.items():
        base = by.get((kernels, batch, "float32"))
        if dtype == "bfloat16" and base:
            print(
                f"bf16/fp32 [{kernels}, batch {batch}]: target-only "
                f"{row['target_only_tokens_per_s'] / base['target_only_tokens_per_s']:.2f}x, "
                f"K=3 {row['speculative_k3_tokens_per_s'] / base['speculative_k3_tokens_per_s']:.2f}x"
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"device": args.device, "torch": torch.__version__, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
