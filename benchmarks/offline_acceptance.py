"""How fast does `smoke --hidden-states` replay a dump, beside the memory-bandwidth floor of the drafter?

Builds a drafter of the chosen size in memory (``--size kimi``: Kimi-K2.5's EAGLE-3 head, hidden 7168, 64
query / 8 key-value heads, intermediate 18432, vocab 163840, draft vocab 32000, about 4.5 GB in bfloat16)
and a synthetic SpecForge dump for it on disk (``--samples`` files of ``--prompt`` + ``--response`` tokens,
aux states 3 x hidden wide), then times ``offline.replay_dump`` over the files twice in one process: cold
(first batches capture CUDA graphs) and warm. Reading, decompression checks, batching and replay are all
inside the timing; building the drafter is not.

Acceptance is set by the data, not by luck: with ``--accept pattern`` the drafter's fc, o_proj and
down_proj are zero, so it always drafts target id d2t[0] + 0 = 0, and the dump's responses repeat
(0, 0, 1): every round from a 1 accepts 2 drafts and emits 3 tokens, the issue's ~3 tokens a round
(a step's cost does not depend on the weights' values). ``--accept random`` keeps random weights and
random tokens: nothing accepted, 1 token a round, the slowest case.

Printed beside the measured data tokens/s: the memory-bandwidth floor, the time to read a step's weights
(all but the embedding, of which a step reads B rows) and the keys/values it attends over at the GPU's
peak bandwidth, turned into tokens/s at the measured tokens per round.

    python benchmarks/offline_acceptance.py --size kimi --device cuda --dtype bfloat16 [--json OUT.json]
    python benchmarks/offline_acceptance.py --size small   # a CPU-sized run of the same code

Goal (issue): >= 50k data tokens/s for the Kimi-sized drafter on one H200 at batch 64.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from specprobe.smoke import offline
from specprobe.smoke.dumps import DumpExpectation, iter_samples, list_dump
from specprobe.smoke.eagle3 import Eagle3Config, Eagle3Drafter
from specprobe.smoke.offline import _batches, _read_to_device, _rows_of, replay_dump, replay_rows
from tests.smoke.dump_writer import sample_path, save_record

SIZES: dict[str, dict[str, int]] = {
    "kimi": {"hidden": 7168, "heads": 64, "kv_heads": 8, "head_dim": 128, "intermediate": 18432,
             "vocab": 163840, "draft_vocab": 32000},
    "small": {"hidden": 256, "heads": 8, "kv_heads": 2, "head_dim": 32, "intermediate": 512,
              "vocab": 4096, "draft_vocab": 1024},
}  # fmt: skip
# Peak HBM bandwidth by device name (vendor data sheets), for the floor.
PEAK_BANDWIDTH = {"H200": 4.8e12, "H100": 3.35e12, "A100": 2.0e12}


def build_drafter(size: dict[str, int], *, device: str, dtype: torch.dtype, accept: str) -> Eagle3Drafter:
    cfg = Eagle3Config(
        hidden_size=size["hidden"], target_hidden_size=size["hidden"], num_attention_heads=size["heads"],
        num_key_value_heads=size["kv_heads"], head_dim=size["head_dim"], intermediate_size=size["intermediate"],
        rms_norm_eps=1e-5, rope_theta=50000.0, target_vocab_size=size["vocab"], draft_vocab_size=size["draft_vocab"],
        aux_layer_ids=(2, 30, 58), aux_layer_ids_declared=True, norm_before_residual=False, norm_output=False,
        attention_bias=False, config_format="specforge",
    )  # fmt: skip
    with torch.device(device):
        drafter = Eagle3Drafter(cfg).to(dtype)
    with torch.no_grad():
        for parameter in drafter.parameters():
            if parameter.dim() > 1:
                parameter.normal_(0.0, 0.02)
        if accept == "pattern":
            for weight in (drafter.fc.weight, drafter.layer.o_proj.weight, drafter.layer.down_proj.weight):
                weight.zero_()
    drafter.d2t = torch.zeros(cfg.draft_vocab_size, dtype=torch.long, device=device)
    drafter.grouped_attention = device.startswith("cuda")
    drafter.eval()
    return drafter


def write_dump(root: Path, *, samples: int, prompt: int, response: int, width: int, vocab: int, accept: str,
               dtype: torch.dtype) -> Path:
    length = prompt + response
    generator = torch.Generator().manual_seed(0)
    # One block of states shared by every file (written again each time): the replay reads every byte of
    # every file, and generating 10+ GB of random numbers would only slow the set-up.
    aux = torch.randn(1, length, width, generator=generator).to(dtype)
    mask = torch.zeros(length, dtype=torch.long)
    mask[prompt:] = 1
    for index in range(samples):
        ids = torch.randint(2, vocab, (length,), generator=generator)
        if accept == "pattern":
            ids[prompt:] = torch.tensor([0, 0, 1]).repeat(response // 3 + 1)[:response]
        save_record({"input_ids": ids, "loss_mask": mask, "aux_hidden_state": aux}, sample_path(root, index))
    return root


def weight_bytes(drafter: Eagle3Drafter) -> tuple[int, int]:
    """Bytes a chained step reads (layer, norms, lm_head) and what a catch-up step reads on top (fc)."""
    step = sum(p.numel() * p.element_size() for n, p in drafter.named_parameters()
               if not n.startswith(("embed_tokens.", "fc.")))  # fmt: skip
    fc = drafter.fc.weight.numel() * drafter.fc.weight.element_size()
    return step, fc


def floor(drafter: Eagle3Drafter, *, batch: int, k: int, tokens_per_round: float, slots: float, device: str) -> dict:
    name = torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu"
    bandwidth = next((bw for key, bw in PEAK_BANDWIDTH.items() if key in name), None)
    step, fc = weight_bytes(drafter)
    cfg = drafter.cfg
    kv_per_slot = 2 * cfg.num_key_value_heads * cfg.head_dim * drafter.fc.weight.element_size()
    # A round: K-1 chained steps and one catch-up, each reading the weights once and every attended slot.
    round_bytes = k * step + fc + k * batch * slots * kv_per_slot
    out: dict[str, Any] = {"device_name": name, "peak_bandwidth_bytes_per_s": bandwidth,
                           "step_weight_bytes": step, "fc_bytes": fc, "round_bytes": round_bytes}  # fmt: skip
    if bandwidth:
        seconds = round_bytes / bandwidth
        out["floor_round_ms"] = seconds * 1e3
        out["floor_tokens_per_s"] = batch * tokens_per_round / seconds
    return out


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def breakdown(drafter: Eagle3Drafter, folder: Any, expect: DumpExpectation, args: argparse.Namespace) -> dict:
    """Where a warm run's time goes: reading and checking the files alone (the second thread's work),
    copying one batch's states to the device, and replaying that batch with its data already read."""
    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    count = sum(1 for _ in iter_samples(folder, list(folder.files), expect, []))
    # The host path: one thread, finiteness checked on the host (the CPU replay's reading).
    out["read_all_host_seconds"] = round(time.perf_counter() - t0, 3)
    out["read_samples"] = count
    if args.device.startswith("cuda"):
        # The GPU replay's reading: READ_THREADS files read, copied to the device and checked there.
        dtype = next(drafter.parameters()).dtype
        unchecked = replace(expect, check_finite=False)
        _sync(args.device)
        t0 = time.perf_counter()
        for _pair in _read_to_device(folder, list(folder.files), unchecked, args.device, dtype):
            pass
        _sync(args.device)
        out["read_all_to_device_seconds"] = round(time.perf_counter() - t0, 3)
    files = list(folder.files)[: args.batch_size]
    samples = iter_samples(folder, files, expect, [])
    rows = [row for i, sample in enumerate(samples) for row in _rows_of(sample, i, args.k)]
    batch = next(_batches(iter(rows), args.batch_size))
    dtype = next(drafter.parameters()).dtype
    _sync(args.device)
    t0 = time.perf_counter()
    for row in batch:
        row.aux.to(device=args.device, dtype=dtype)
    _sync(args.device)
    out["copy_batch_seconds"] = round(time.perf_counter() - t0, 3)
    # The batch with its states on the device already: replay_rows' own copy is then device-to-device.
    on_device = [type(r)(r.sample, r.tokens, r.aux.to(device=args.device, dtype=dtype), r.start, r.end) for r in batch]
    rounds = []
    for _ in range(2):
        _sync(args.device)
        t0 = time.perf_counter()
        results = replay_rows(drafter, on_device, args.k, device=args.device)
        _sync(args.device)
        rounds.append(time.perf_counter() - t0)
    drafts = sum(d for d, _a, _p in results)
    out["replay_batch_seconds"] = [round(x, 3) for x in rounds]
    out["replay_batch_rounds"] = max(d for d, _a, _p in results)
    out["replay_ms_per_round"] = round(1e3 * rounds[-1] / max(1, out["replay_batch_rounds"]), 3)
    out["replay_batch_drafts"] = drafts
    if args.device.startswith("cuda") and args.profile_dir:
        from torch.profiler import ProfilerActivity, profile  # only for --profile-dir

        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            replay_rows(drafter, on_device, args.k, device=args.device)
            _sync(args.device)
        table = prof.key_averages()
        Path(args.profile_dir).mkdir(parents=True, exist_ok=True)
        (Path(args.profile_dir) / "by_cuda.txt").write_text(table.table(sort_by="cuda_time_total", row_limit=40))
        (Path(args.profile_dir) / "by_cpu.txt").write_text(table.table(sort_by="self_cpu_time_total", row_limit=40))
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    size = SIZES[args.size]
    dtype = {"bfloat16": torch.bfloat16, "float32": torch.float32}[args.dtype]
    if args.device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = False
    work = Path(args.dump_dir) if args.dump_dir else Path(tempfile.mkdtemp(prefix="offline-bench-"))
    result: dict[str, Any] = {"args": vars(args), "torch": torch.__version__}
    try:
        started = time.perf_counter()
        dump_root = write_dump(work / "dump", samples=args.samples, prompt=args.prompt, response=args.response,
                               width=3 * size["hidden"], vocab=size["vocab"], accept=args.accept, dtype=dtype)
        result["dump_write_seconds"] = round(time.perf_counter() - started, 1)
        result["dump_bytes"] = sum(p.stat().st_size for p in dump_root.rglob("*.ckpt"))
        drafter = build_drafter(size, device=args.device, dtype=dtype, accept=args.accept)
        result["drafter_parameters"] = sum(p.numel() for p in drafter.parameters())
        result["drafter_bytes"] = sum(p.numel() * p.element_size() for p in drafter.parameters())
        folder = list_dump(dump_root)
        expect = DumpExpectation(size["hidden"], 3, size["vocab"])
        runs = []
        offline.READ_THREADS = args.read_threads
        settings = [value == "on" for value in args.device_reads.split(",")]
        plan = [("cold", settings[0])] + [("warm", setting) for setting in settings]
        for label, setting in plan:
            offline.DEVICE_READS = setting
            if args.device.startswith("cuda"):
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()
            problems: list[Any] = []
            t0 = time.perf_counter()
            counts, totals = replay_dump(drafter, folder, list(folder.files), expect, k=args.k, device=args.device,
                                         batch_size=args.batch_size, problems=problems)
            seconds = time.perf_counter() - t0
            drafts, accepted = sum(counts.drafts), sum(counts.accepted)
            entry = {
                "run": label,
                "device_reads": setting,
                "seconds": round(seconds, 3),
                "data_tokens": totals["data_tokens"],
                "data_tokens_per_s": round(totals["data_tokens"] / seconds, 1),
                "replayed_tokens_per_s": round((drafts + accepted) / seconds, 1),
                "drafts": drafts,
                "mean_acceptance_length": round(1 + accepted / drafts, 4) if drafts else None,
                "problems": [str(p) for p in problems],
                "peak_gpu_bytes": torch.cuda.max_memory_allocated() if args.device.startswith("cuda") else None,
                "host_max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            }
            runs.append(entry)
            print(json.dumps(entry), flush=True)
        result["runs"] = runs
        if args.breakdown:
            result["breakdown"] = breakdown(drafter, folder, expect, args)
        warm = runs[1]
        per_round = warm["mean_acceptance_length"] or 1.0
        slots = args.prompt + 2 * args.k * (args.response / per_round) / 2  # mean slots attended
        result["floor"] = floor(drafter, batch=args.batch_size, k=args.k, tokens_per_round=per_round, slots=slots,
                                device=args.device)
        if result["floor"].get("floor_tokens_per_s"):
            # The floor counts the response tokens a round emits; the data rate counts the context too.
            replayed = warm["replayed_tokens_per_s"]
            result["replayed_over_floor"] = round(replayed / result["floor"]["floor_tokens_per_s"], 3)
    finally:
        if not args.dump_dir:
            shutil.rmtree(work, ignore_errors=True)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=("bfloat16", "float32"), default="float32")
    parser.add_argument("--samples", type=int, default=32)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--response", type=int, default=384)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("-k", type=int, default=3)
    parser.add_argument("--accept", choices=("pattern", "random"), default="pattern")
    parser.add_argument("--dump-dir", help="keep the synthetic dump here (default: a temporary folder, removed)")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--read-threads", type=int, default=offline.READ_THREADS,
                        help="files read, copied and checked at once with --device-reads on (GPU)")
    parser.add_argument("--device-reads", default="on",
                        help="on,off: warm runs with the GPU copy and check on the reading thread, and without")
    parser.add_argument("--breakdown", action="store_true",
                        help="also time reading alone, one batch's copy to the device and its replay alone")
    parser.add_argument("--profile-dir", help="with --breakdown on a GPU: torch profiler tables of one batch here")
    args = parser.parse_args(argv)
    result = run(args)
    warm = result["runs"][1]
    fl = result["floor"]
    print(f"{args.size} drafter ({result['drafter_bytes'] / 1e9:.2f} GB {args.dtype}) on {fl['device_name']}, "
          f"batch {args.batch_size}, K={args.k}: {warm['data_tokens_per_s']:.0f} data tokens/s warm "
          f"({warm['replayed_tokens_per_s']:.0f} replayed response tokens/s, mean acceptance length "
          f"{warm['mean_acceptance_length']})")
    if "floor_tokens_per_s" in fl:
        print(f"memory-bandwidth floor: {fl['floor_round_ms']:.3f} ms a round, {fl['floor_tokens_per_s']:.0f} response "
              f"tokens/s; measured/floor {result['replayed_over_floor']}")
    else:
        print("memory-bandwidth floor: no peak bandwidth known for this device")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
