"""A target's input embedding read alone, from a local folder and from the hub, side by side.

Builds a target of Llama-3.1-8B's vocabulary and width as sparse files (four shards, 5.9 GB on paper: the
bf16 embedding 128256 x 4096 = 1.05 GB in the first shard beside 0.9 GB of other weights, lm_head in the
last, an index),
publishes it on the loopback hub-protocol server of the tests (tests/hub/hubserver.py; HF_ENDPOINT points
at it), and reads the embedding through ``specprobe.modelfiles.TensorReader`` in a fresh interpreter per
case: from the local folder, from the hub with an empty cache, from the hub again with HF_HUB_OFFLINE=1
from what the first hub read kept, and from the local folder again (the spread of this machine). Prints
each case's seconds, its peak resident memory beside the tensor's size, the ratios to the faster local
read, and what the server sent (bytes, requests, no shard whole).

    PYTHONPATH=. python benchmarks/hub_target_tensor.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from specprobe.checkpoint.writer import TensorSpec, write_safetensors
from specprobe.demo.fixtures import target_config, write_json
from tests.hub.hubserver import publish, serve_hub

HIDDEN, VOCAB, LAYERS_PER_SHARD = 4096, 128256, 8

READ = """
import json, resource, sys, time
from specprobe.checkpoint.tensors import TensorReader
from specprobe.modelfiles import HubSession, locate
started = time.perf_counter()
reader = TensorReader(locate(sys.argv[1], role="target", hub=HubSession()))
location = reader.embedding()
data = reader.read(location)
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "bytes": len(data), "peak_rss": peak}))
"""


def build(folder: Path) -> Path:
    folder.mkdir(parents=True)
    layer = {"mlp.down_proj.weight": (HIDDEN, 14336), "mlp.up_proj.weight": (14336, HIDDEN)}
    embedding = TensorSpec("BF16", (VOCAB, HIDDEN))
    shards: list[dict[str, TensorSpec]] = [{"model.embed_tokens.weight": embedding}, {}, {}, {}]
    for index in range(4 * LAYERS_PER_SHARD // 2):
        for name, shape in layer.items():
            shards[index // (LAYERS_PER_SHARD // 2)][f"model.layers.{index}.{name}"] = TensorSpec("BF16", shape)
    shards[-1]["model.norm.weight"] = TensorSpec("BF16", (HIDDEN,))
    shards[-1]["lm_head.weight"] = TensorSpec("BF16", (VOCAB, HIDDEN))
    weight_map = {}
    for number, tensors in enumerate(shards, start=1):
        name = f"model-{number:05d}-of-00004.safetensors"
        write_safetensors(folder / name, tensors)
        weight_map.update(dict.fromkeys(tensors, name))
    write_json(folder / "model.safetensors.index.json", {"metadata": {}, "weight_map": weight_map})
    write_json(folder / "config.json", target_config(hidden_size=HIDDEN, vocab_size=VOCAB, num_hidden_layers=32))
    return folder


def run(target: str, env: dict[str, str]) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", READ, target], env=env, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="hub-target-") as tmp:
        root = Path(tmp)
        target = build(root / "target")
        repos = root / "repos"
        publish(repos, "meta/llama-sized", target)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "SPECPROBE_HUB"))}
        env.update({"HF_HOME": str(root / "home"), "HF_HUB_DISABLE_TELEMETRY": "1"})
        with serve_hub(repos) as hub:
            env["HF_ENDPOINT"] = hub.url
            local = run(str(target), env)
            online = run("meta/llama-sized", env)
            sent, requests = hub.served.bytes_by_repo["meta/llama-sized"], len(hub.served.requests)
            whole = hub.served.whole_weight_files()
            hub.served.reset()
            offline = run("meta/llama-sized", {**env, "HF_HUB_OFFLINE": "1"})
            offline_requests = len(hub.served.requests)
        again = run(str(target), env)
        size = sum(p.stat().st_size for p in target.iterdir())
        tensor = int(local["bytes"])
        base = min(local["seconds"], again["seconds"])
        print(f"target on paper: {size / 1e9:.2f} GB in 4 shards; embedding {tensor / 1e9:.3f} GB "
              f"(BF16 {VOCAB} x {HIDDEN})")
        for name, case in (("local folder", local), ("hub, empty cache", online), ("hub, HF_HUB_OFFLINE=1", offline),
                           ("local folder again", again)):
            print(f"{name:24s} {case['seconds']:7.3f} s  {case['seconds'] / base:6.2f}x local  "
                  f"peak RSS {case['peak_rss'] / 1e9:.3f} GB = {case['peak_rss'] / tensor:.2f}x the tensor")
        print(f"hub sent {sent} bytes in {requests} requests ({sent - tensor} beside the tensor: listing aside, "
              f"config.json, index, one header); whole shards sent: {len(whole)}; offline requests: {offline_requests}")


if __name__ == "__main__":
    main()
