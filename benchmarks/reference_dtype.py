"""Does the reference smoke backend run as fast in bfloat16 as in float32?

Loads a demo target and drafter (``--models DIR`` with ``target/`` and ``draft/``, as written by
``python -m specprobe.demo.train``; ``--quick-plan gpu`` writes barely trained models of the GPU plan's
shapes first, enough for timing), then times, in one process and side by side, target-only greedy
decoding and greedy chain speculative decoding (K=3) in float32 and bfloat16, at batch 1 and at the
batch of all prompts: the first run after the warm-up `specprobe smoke` does, and the median of
``--repeats`` runs, the two dtypes' runs interleaved.

``--graphs on,off`` runs the loops with their steps replayed from CUDA graphs (what the backend does
on a GPU) and eagerly (one launch per kernel, the earlier behaviour); ``--attention fixed,cudnn`` with
the attention kernels the backend decodes with and with cuDNN's per-shape kernel allowed (the
behaviour before that). Every variant's tokens are compared with the first variant's of the same
dtype (``tokens_equal_to_first_variant``), so a faster path that changed the output shows.
``--overlap on,off`` queues each speculative round before reading the previous round's acceptance
counts (the backend's default on a GPU) or waits for every round first; the rows then give K=3 over
target-only (``speedup_k3``) per variant, and the last lines K=3 tokens/s with overlap over without.
``--bucket 128,whole`` has captured steps attend over the cache in buckets of that many slots (the
backend's default, 128) or over its whole capacity (the behaviour before buckets).
``--kernels`` counts the GPU kernels of one target step and one speculative round per dtype and names
the kernels whose number differs between the dtypes; ``--profile`` prints the heaviest operators of
one bfloat16 run.

    python benchmarks/reference_dtype.py --models DIR --device cuda [--json OUT.json]

Goal: bfloat16 tokens/s >= float32 tokens/s for both loops and both batches (on a GPU; on a CPU
bfloat16 is emulated). The last lines print bf16/fp32 side by side per variant and batch.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch
from torch.nn.attention import SDPBackend

from specprobe.smoke import eagle3, reference
from specprobe.smoke.eagle3 import resolve_dtype
from specprobe.smoke.prompts import encode_prompts, load_prompts
from specprobe.smoke.reference import (
    GreedyResult,
    SpeculativeResult,
    greedy_generate,
    load_reference_drafter,
    load_target,
    speculative_generate,
)
from specprobe.smoke.stats import from_counts

K = 3
DTYPES = ("float32", "bfloat16")


@contextlib.contextmanager
def variant(graphs: str, attention: str, overlap: str = "on", bucket: str = "128") -> Iterator[None]:
    """``graphs`` on/off: CUDA graph replay of the decoding steps or eager launches. ``attention`` fixed:
    the kernels the reference backend decodes with; cudnn: every kernel torch has, cuDNN's per-shape one
    first on Hopper (what the backend did before it chose its decoding kernels)."""
    saved = eagle3.DECODE_ATTENTION_BACKENDS, reference.CUDA_GRAPHS, reference.OVERLAP_ROUNDS, eagle3.VIEW_BUCKET
    if attention == "cudnn":
        eagle3.DECODE_ATTENTION_BACKENDS = [SDPBackend.CUDNN_ATTENTION, *saved[0]]
    reference.CUDA_GRAPHS = graphs == "on"
    reference.OVERLAP_ROUNDS = overlap == "on"
    eagle3.VIEW_BUCKET = None if bucket == "whole" else int(bucket)
    try:
        yield
    finally:
        eagle3.DECODE_ATTENTION_BACKENDS, reference.CUDA_GRAPHS, reference.OVERLAP_ROUNDS, eagle3.VIEW_BUCKET = saved


def _tokens_per_s(result: GreedyResult | SpeculativeResult) -> float:
    return sum(len(t) for t in result.tokens) / result.seconds


def kernels_per_step(target: Any, drafter: Any, prompt: list[int], device: str) -> dict[str, Any]:
    """GPU kernels (and copies) launched per target decoding step and per speculative round, eagerly,
    with the kernels of one target step by name (a captured graph launches the same kernels)."""
    from torch.autograd import DeviceType  # type: ignore[attr-defined]
    from torch.profiler import ProfilerActivity, profile

    def kernels(run: Callable[[], Any]) -> Counter[str]:
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            run()
        return Counter(event.name for event in prof.events() if event.device_type == DeviceType.CUDA)

    with variant("off", "fixed"):
        greedy = kernels(lambda: greedy_generate(target, [prompt], 33, device=device))
        greedy_one = kernels(lambda: greedy_generate(target, [prompt], 1, device=device))
        rounds = speculative_generate(target, drafter, [prompt], 33, K, device=device).drafts[0]
        spec = kernels(lambda: speculative_generate(target, drafter, [prompt], 33, K, device=device))
        spec_one = kernels(lambda: speculative_generate(target, drafter, [prompt], 1, K, device=device))
    step = greedy - greedy_one
    return {
        "target_step": round(step.total() / 32, 1),
        "speculative_round": round((spec.total() - spec_one.total()) / max(1, rounds), 1),
        "target_step_by_name": {name: round(count / 32, 2) for name, count in sorted(step.items())},
    }


def measure(
    models: Path,
    *,
    device: str,
    new_tokens: int,
    batches: list[int],
    repeats: int,
    variants: list[tuple[str, str, str, str]],
    kernels: bool,
    profile: bool,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Both dtypes loaded at once and their runs interleaved (float32, bfloat16, float32, ...), so that
    drift in the machine's speed during the run falls on both alike."""
    if device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    loaded: dict[str, tuple[Any, Any]] = {}
    for dtype_name in DTYPES:
        target = load_target(str(models / "target"), device=device, dtype=resolve_dtype(dtype_name))
        loaded[dtype_name] = (
            target,
            load_reference_drafter(models / "draft", target, device=device, dtype=target.model.dtype),
        )
    encoded = encode_prompts(loaded["float32"][0].tokenizer, load_prompts())
    rows: list[dict[str, Any]] = []
    extra: dict[str, Any] = {}
    first_tokens: dict[tuple[str, int], tuple[list[list[int]], list[list[int]]]] = {}
    for graphs, attention, overlap, bucket in variants:
        with variant(graphs, attention, overlap, bucket):
            for target, drafter in loaded.values():
                # Graphs captured under another variant's kernels must not be replayed under this one.
                reference.forget_steps(target.model, drafter)
                # The warm-up `specprobe smoke` does: one short prompt, four tokens.
                greedy_generate(target, encoded[:1], 4, device=device)
                speculative_generate(target, drafter, encoded[:1], 4, K, device=device)
            for batch in batches:
                prompts = encoded[:batch]
                rates: dict[str, dict[str, list[float]]] = {d: {"greedy": [], "spec": []} for d in DTYPES}
                last: dict[tuple[str, str], Any] = {}
                for _ in range(repeats):
                    for dtype_name, (target, _drafter) in loaded.items():
                        result = greedy_generate(target, prompts, new_tokens, device=device)
                        rates[dtype_name]["greedy"].append(_tokens_per_s(result))
                        last[dtype_name, "greedy"] = result
                    for dtype_name, (target, drafter) in loaded.items():
                        spec_result = speculative_generate(target, drafter, prompts, new_tokens, K, device=device)
                        rates[dtype_name]["spec"].append(_tokens_per_s(spec_result))
                        last[dtype_name, "spec"] = spec_result
                for dtype_name in DTYPES:
                    base, spec = last[dtype_name, "greedy"], last[dtype_name, "spec"]
                    stats = from_counts(K, spec.drafts, spec.accepted, spec.accepted_per_pos)
                    greedy_rates, spec_rates = rates[dtype_name]["greedy"], rates[dtype_name]["spec"]
                    row: dict[str, Any] = {
                        "dtype": dtype_name,
                        "graphs": graphs,
                        "attention": attention,
                        "overlap": overlap,
                        "bucket": bucket,
                        "batch": len(prompts),
                        "target_only_tokens_per_s": round(statistics.median(greedy_rates), 1),
                        "speculative_k3_tokens_per_s": round(statistics.median(spec_rates), 1),
                        "target_only_first_run_tokens_per_s": round(greedy_rates[0], 1),
                        "speculative_k3_first_run_tokens_per_s": round(spec_rates[0], 1),
                        "speedup_k3": round(statistics.median(spec_rates) / statistics.median(greedy_rates), 3),
                        "target_only_runs": [round(r, 1) for r in greedy_rates],
                        "speculative_k3_runs": [round(r, 1) for r in spec_rates],
                        "mean_acceptance_length": round(stats.mean_acceptance_length, 4),
                        "lossless_prompts": sum(a == b for a, b in zip(spec.tokens, base.tokens, strict=True)),
                    }
                    reference_tokens = first_tokens.setdefault((dtype_name, batch), (base.tokens, spec.tokens))
                    row["tokens_equal_to_first_variant"] = reference_tokens == (base.tokens, spec.tokens)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
            for dtype_name, (target, drafter) in loaded.items():
                # How many steps replayed from graphs, and any capture that failed (then they ran eagerly).
                stats_key = f"graph_stats_{dtype_name}_{graphs}_{attention}_{overlap}_{bucket}"
                extra[stats_key] = reference.graph_stats(target.model, drafter)
    for dtype_name, (target, drafter) in loaded.items():
        if kernels and device.startswith("cuda"):
            extra[f"kernels_{dtype_name}"] = kernels_per_step(target, drafter, encoded[0], device)
    if "kernels_float32" in extra:
        fp32, bf16 = (extra[f"kernels_{d}"]["target_step_by_name"] for d in DTYPES)
        extra["kernels_differing_per_target_step"] = {
            name: [fp32.get(name, 0), bf16.get(name, 0)]
            for name in sorted(set(fp32) | set(bf16))
            if fp32.get(name, 0) != bf16.get(name, 0)
        }
        for dtype_name in DTYPES:
            counts = extra[f"kernels_{dtype_name}"]
            print(
                dtype_name,
                "kernels per target step",
                counts["target_step"],
                "per K=3 round",
                counts["speculative_round"],
            )
        print("kernels that differ per target step [float32, bfloat16]:", flush=True)
        for name, counts in extra["kernels_differing_per_target_step"].items():
            print(f"  {counts} {name[:150]}")
    if profile:
        from torch.profiler import ProfilerActivity
        from torch.profiler import profile as torch_profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.startswith("cuda") else [])
        with torch_profile(activities=activities) as prof:
            greedy_generate(loaded["bfloat16"][0], encoded[:1], 16, device=device)
        print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=15), flush=True)
        # Where a speculative round's time goes at the largest batch: device time by kernel, with the
        # graphs replayed (what the backend runs), after a warm-up run has captured them.
        target, drafter = loaded["bfloat16"]
        prompts = encoded[: max(batches)]
        speculative_generate(target, drafter, prompts, 32, K, device=device)
        with torch_profile(activities=activities) as prof:
            spec_result = speculative_generate(target, drafter, prompts, 32, K, device=device)
        print(f"speculative K={K}, batch {len(prompts)}, bfloat16: {max(spec_result.drafts)} rounds, "
              f"{spec_result.seconds * 1000:.1f} ms", flush=True)
        sort = "device_time_total" if device.startswith("cuda") else "cpu_time_total"
        print(prof.key_averages().table(sort_by=sort, row_limit=25), flush=True)
    return rows, extra


AXES = ("graphs", "attention", "overlap", "bucket", "batch", "dtype")


def switch_ratios(rows: list[dict[str, Any]], axis: str, new: str, old: str) -> list[dict[str, Any]]:
    """Tokens/s with ``axis`` at ``new`` over ``axis`` at ``old``, everything else equal, for both loops."""
    by = {tuple(r[name] for name in AXES): r for r in rows}
    at = AXES.index(axis)
    out = []
    for key, row in by.items():
        base = by.get((*key[:at], old, *key[at + 1 :]))
        if key[at] != new or base is None:
            continue
        out.append(
            {
                **{name: value for name, value in zip(AXES, key, strict=True) if name != axis},
                "target_only": round(row["target_only_tokens_per_s"] / base["target_only_tokens_per_s"], 3),
                "speculative_k3": round(row["speculative_k3_tokens_per_s"] / base["speculative_k3_tokens_per_s"], 3),
                "speedup_k3": [base["speedup_k3"], row["speedup_k3"]],
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, required=True)
    parser.add_argument("--quick-plan", choices=("tiny", "gpu"), help="write barely trained models of this plan first")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--batches", default="1,24")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--graphs", default="on,off", help="comma list of on, off (CUDA graph replay)")
    parser.add_argument("--attention", default="fixed", help="comma list of fixed, cudnn")
    parser.add_argument("--overlap", default="on", help="comma list of on, off (speculative rounds overlapped)")
    parser.add_argument("--bucket", default="128", help="comma list of slot buckets (a number or whole)")
    parser.add_argument("--kernels", action="store_true", help="count GPU kernels per step and round")
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
    variants = [
        (g, a, o, b)
        for g in args.graphs.split(",")
        for a in args.attention.split(",")
        for o in args.overlap.split(",")
        for b in args.bucket.split(",")
    ]
    rows, extra = measure(
        args.models,
        device=args.device,
        new_tokens=args.new_tokens,
        batches=[int(b) for b in args.batches.split(",")],
        repeats=args.repeats,
        variants=variants,
        kernels=args.kernels,
        profile=args.profile,
    )
    print("tokens/s, median of the repeats (first run in brackets); acceptance = mean acceptance length at K=3")
    print(
        f"{'dtype':<9} {'graphs':<6} {'attention':<9} {'overlap':<7} {'bucket':<6} {'batch':>5} {'target-only':>16} "
        f"{'K=3':>16} {'speedup':>7} {'accept':>7} same"
    )
    for row in rows:
        greedy = f"{row['target_only_tokens_per_s']} ({row['target_only_first_run_tokens_per_s']})"
        spec = f"{row['speculative_k3_tokens_per_s']} ({row['speculative_k3_first_run_tokens_per_s']})"
        print(
            f"{row['dtype']:<9} {row['graphs']:<6} {row['attention']:<9} {row['overlap']:<7} {row['bucket']:<6} "
            f"{row['batch']:>5} "
            f"{greedy:>16} {spec:>16} {row['speedup_k3']:>7} {row['mean_acceptance_length']:>7} "
            f"{row['tokens_equal_to_first_variant']}"
        )
    compared: dict[str, list[dict[str, Any]]] = {}
    for axis, new, old in (("dtype", "bfloat16", "float32"), ("overlap", "on", "off"), ("bucket", "128", "whole")):
        compared[f"{axis}_{new}_over_{old}"] = pairs = switch_ratios(rows, axis, new, old)
        for ratio in pairs:
            where = ", ".join(f"{name} {ratio[name]}" for name in AXES if name != axis)
            print(
                f"{axis} {new}/{old} [{where}]: target-only {ratio['target_only']:.2f}x, K=3 "
                f"{ratio['speculative_k3']:.2f}x; K=3 over target-only {ratio['speedup_k3'][0]:.2f}x -> "
                f"{ratio['speedup_k3'][1]:.2f}x"
            )
    if args.json:
        import transformers

        args.json.parent.mkdir(parents=True, exist_ok=True)
        gpu = torch.cuda.get_device_name(0) if args.device.startswith("cuda") else None
        args.json.write_text(
            json.dumps(
                {
                    "device": args.device,
                    "gpu": gpu,
                    "torch": torch.__version__,
                    "transformers": transformers.__version__,
                    "new_tokens": args.new_tokens,
                    "repeats": args.repeats,
                    "rows": rows,
                    **compared,
                    **extra,
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
