"""One-off device check behind graphs-check.log: fused norms on CUDA, and the reference backend before (commit 33b99d9, saved as old_reference.py / old_eagle3.py with the import renamed) against after, on the same trained models.

    python3 graphs-check.py DIR_WITH_OLD_MODULES MODELS 24 [norms]
"""
import sys, time, json
import torch
sys.path.insert(0, sys.argv[1])  # folder with old_reference.py / old_eagle3.py
models = sys.argv[2]
batch = int(sys.argv[3]) if len(sys.argv) > 3 else 24
from torch.nn import functional as F
from torch.profiler import profile, ProfilerActivity
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

def kernels(fn):
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        fn(); torch.cuda.synchronize()
    return sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA)

if sys.argv[4:5] == ["norms"]:
    from transformers.models.llama.modeling_llama import LlamaRMSNorm
    from specprobe.smoke.reference import fuse_rms_norms
    from specprobe.smoke.eagle3 import RMSNorm
    for dt in (torch.float32, torch.bfloat16):
        x = (torch.randn(24, 4, 768, device="cuda") * 3).to(dt)
        hf = LlamaRMSNorm(768, eps=1e-5).to("cuda", dt); hf.weight.data = (torch.randn(768, device="cuda") * 0.3 + 1).to(dt)
        with torch.inference_mode():
            a = hf(x); ka = kernels(lambda: hf(x))
            print("fused target norms", fuse_rms_norms(hf))
            b = hf(x); kb = kernels(lambda: hf(x))
            dn = RMSNorm(768, 1e-5).to("cuda", dt); dn.weight.data = hf.weight.data.clone()
            c = dn(x); kc = kernels(lambda: dn(x))
            x32 = x.float(); old = (dn.weight.float() * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-5))).to(dt)
        print(dt, "target norm: differing elements", int((a != b).sum()), "of", a.numel(), "max abs", float((a.float() - b.float()).abs().max()), "kernels", ka, "->", kb)
        print(dt, "drafter norm: differing elements", int((c != old).sum()), "max abs", float((c.float() - old.float()).abs().max()), "kernels ->", kc)
    sys.exit(0)

import old_reference as old
from specprobe.smoke import reference as new
from specprobe.smoke.prompts import encode_prompts, load_prompts
from specprobe.smoke.stats import from_counts
summary = {}
for dn in ("float32", "bfloat16"):
    dt = new.resolve_dtype(dn)
    t_old = old.load_target(models + "/target", device="cuda", dtype=dt); d_old = old.load_reference_drafter(__import__("pathlib").Path(models) / "draft", t_old, device="cuda", dtype=dt)
    t_new = new.load_target(models + "/target", device="cuda", dtype=dt); d_new = new.load_reference_drafter(__import__("pathlib").Path(models) / "draft", t_new, device="cuda", dtype=dt)
    enc = encode_prompts(t_new.tokenizer, load_prompts())[:batch]
    res = {}
    for name, mod, t, d in (("old", old, t_old, d_old), ("new", new, t_new, d_new)):
        mod.greedy_generate(t, enc[:1], 4, device="cuda"); mod.speculative_generate(t, d, enc[:1], 4, 3, device="cuda")
        for _ in range(2):  # the second run replays graphs in the new code
            g = mod.greedy_generate(t, enc, 128, device="cuda"); s = mod.speculative_generate(t, d, enc, 128, 3, device="cuda")
        st = from_counts(3, s.drafts, s.accepted, s.accepted_per_pos)
        res[name] = (g, s, st)
        print(dn, name, f"greedy {g.seconds:.3f}s spec {s.seconds:.3f}s acceptance {st.mean_acceptance_length:.4f} per-pos {st.per_position if hasattr(st,'per_position') else ''} lossless {sum(a==b for a,b in zip(g.tokens, s.tokens))}/{len(enc)}", flush=True)
    go, so, sto = res["old"]; gn, sn, stn = res["new"]
    line = {"dtype": dn, "batch": len(enc), "greedy_prompts_equal": sum(a == b for a, b in zip(go.tokens, gn.tokens)), "spec_prompts_equal": sum(a == b for a, b in zip(so.tokens, sn.tokens)), "acceptance_old": round(sto.mean_acceptance_length, 4), "acceptance_new": round(stn.mean_acceptance_length, 4), "graph_stats": new.graph_stats(t_new.model, d_new)}
    print(json.dumps(line), flush=True)
    del t_old, d_old, t_new, d_new
