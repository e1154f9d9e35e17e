"""One-off: GPU time of the demo target's linear layers at batch 1 by dtype, replayed from a CUDA graph."""
import torch
from torch.nn import functional as F
from torch.profiler import profile, ProfilerActivity
torch.backends.cuda.matmul.allow_tf32 = False
shapes = [("q/o", 768, 768), ("k/v", 256, 768), ("gate/up", 3072, 768), ("down", 768, 3072), ("lm_head", 8192, 768)]
for reduced in (True, False):
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = reduced
    for dt in (torch.float32, torch.bfloat16):
        line = []
        for name, n, k in shapes:
            ws = [torch.randn(n, k, device="cuda", dtype=dt) for _ in range(8)]  # rotate: more than L2 holds? 8 copies
            x = torch.randn(1, 1, k, device="cuda", dtype=dt)
            for w in ws: F.linear(x, w)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as p:
                F.linear(x, ws[0]); torch.cuda.synchronize()
            kernels = [e.name[:60] for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(25):
                    for w in ws: F.linear(x, w)
            g.replay(); torch.cuda.synchronize()
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record(); [g.replay() for _ in range(5)]; b.record(); torch.cuda.synchronize()
            us = a.elapsed_time(b) * 1000 / (5 * 25 * 8)
            line.append(f"{name} {us:.2f}us {len(kernels)}k")
            if name == "down": print("   ", dt, "reduced" if reduced else "full", "down kernels:", kernels)
        print(str(dt).ljust(15), "bf16 reduced reduction" if reduced else "full reduction", " | ".join(line), flush=True)
