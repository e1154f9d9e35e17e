"""A fleet gated against the hub: 1,000 deployments naming 50 distinct hub drafters, each read once.

Builds, in one run, 50 EAGLE-3 drafters of Llama-3.1-8B's sizes (sparse files: 850 MB each on paper,
real d2t/t2d) and their target's config.json, publishes them on the loopback hub-protocol server of the
tests (tests/hub/hubserver.py; HF_ENDPOINT points at it), and writes two multi-document Kubernetes
manifests of 1,000 Deployments: one naming the hub ids, one naming the same drafters as local folders.
Each is gated as a subprocess (interpreter start included, as CI runs it): the local manifest, the hub
manifest with an empty cache, and the hub manifest again with HF_HUB_OFFLINE=1 from what the first hub
run cached. Prints the times, their ratios, and what the server sent (requests and bytes per
repository: each repository's file list is asked once, and no weight file is sent whole).

    PYTHONPATH=. python benchmarks/hub_gate.py [--deployments 1000] [--drafters 50]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from specprobe.demo.fixtures import DraftSpec, build_draft, target_config, write_json
from tests.gate.fleet import write_fleet
from tests.hub.hubserver import publish, serve_hub


def _drafter(seed: int) -> DraftSpec:
    return DraftSpec(
        draft_format="specforge", hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
        intermediate_size=14336, vocab_size=128256, draft_vocab_size=32000, aux_layer_ids=[1, 15, 28],
        dtype="BF16", sparse=True, seed=seed,
    )


def _manifest(path: Path, count: int, target: str, drafts: list[str]) -> Path:
    return write_fleet(path, target, [drafts[i % len(drafts)] for i in range(count)])


def _gate(manifest: Path, env: dict[str, str]) -> tuple[float, int]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "specprobe", "gate", str(manifest), "--format", "json"],
                          env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        sys.stderr.write(done.stdout[-2000:] + done.stderr[-2000:])
    return elapsed, done.returncode


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deployments", type=int, default=1000)
    parser.add_argument("--drafters", type=int, default=50)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        root = work / "repos"
        local: list[str] = []
        for index in range(options.drafters):
            folder = build_draft(work / "local" / f"eagle3-{index}", _drafter(index))
            publish(root, f"bench/eagle3-{index}", folder)
            local.append(str(folder))
        target = work / "local" / "target"
        target.mkdir()
        write_json(target / "config.json", target_config(hidden_size=4096, vocab_size=128256, num_hidden_layers=32))
        publish(root, "bench/llama-target", target)
        hub_ids = [f"bench/eagle3-{index}" for index in range(options.drafters)]
        on_disk = _manifest(work / "local.yaml", options.deployments, str(target), local)
        on_hub = _manifest(work / "hub.yaml", options.deployments, "bench/llama-target", hub_ids)
        paper = sum(Path(p, "model.safetensors").stat().st_size for p in local)

        with serve_hub(root) as hub:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "SPECPROBE_HUB"))}
            env.update({"HF_ENDPOINT": hub.url, "HF_HOME": str(work / "home"), "HF_HUB_DISABLE_TELEMETRY": "1"})
            local_s, local_rc = _gate(on_disk, env)
            cold_s, cold_rc = _gate(on_hub, env)
            listings = Counter(p.split("/revision/")[0] for _, p, _ in hub.served.requests if "/api/models/" in p)
            requests, sent = len(hub.served.requests), sum(hub.served.bytes_by_repo.values())
            whole = hub.served.whole_weight_files()
            offline_s, offline_rc = _gate(on_hub, {**env, "HF_HUB_OFFLINE": "1"})
            offline_requests = len(hub.served.requests) - requests

    print(f"{options.deployments} deployments, {options.drafters} distinct drafters "
          f"({paper / 1e9:.1f} GB of weights on paper) + 1 target")
    print(f"  local folders          {local_s:6.2f} s  (exit {local_rc})")
    print(f"  hub, empty cache       {cold_s:6.2f} s  (exit {cold_rc})  ratio to local {cold_s / local_s:.2f}x")
    print(f"  hub, HF_HUB_OFFLINE=1  {offline_s:6.2f} s  (exit {offline_rc})  "
          f"ratio to local {offline_s / local_s:.2f}x")
    print(f"  hub requests: {requests} for {len(listings)} repositories; file list asked at most "
          f"{max(listings.values())}x per repository; {offline_requests} requests offline")
    print(f"  bytes served: {sent / 1e6:.2f} MB in all, {sent / max(1, len(listings)) / 1e3:.0f} kB per repository; "
          f"weight files sent whole: {len(whole)}")


if __name__ == "__main__":
    main()
