"""Targets given as hub ids and drafters living in the hub cache, without network access.

huggingface_hub reads HF_HUB_OFFLINE and HF_HUB_CACHE when it is imported, so these run the CLI in a
subprocess with a cache laid out the way huggingface_hub writes it (blobs + snapshot symlinks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from specprobe.demo.fixtures import DraftSpec, build_draft, target_config

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _cache_repo(cache: Path, repo_id: str, files: dict[str, Path]) -> Path:
    """Place ``files`` in the hub cache of ``repo_id``; returns the snapshot folder."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir()
    for name, source in files.items():
        blob = repo / "blobs" / f"blob-{name}"
        blob.write_bytes(source.read_bytes())
        (snapshot / name).symlink_to(Path("..") / ".." / "blobs" / blob.name)
    return snapshot


def _run(args: list[str], cache: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "specprobe", *args], capture_output=True, text=True, env=env, check=False, timeout=120
    )


def test_hub_target_from_the_local_cache_and_a_cached_drafter(tmp_path: Path) -> None:
    source = tmp_path / "source"
    build_draft(source / "draft", DraftSpec(draft_format="specforge"))
    (source / "target.json").write_text(json.dumps(target_config(num_hidden_layers=4)))
    cache = tmp_path / "cache"
    _cache_repo(cache, "acme/tiny-target", {"config.json": source / "target.json"})
    draft = _cache_repo(
        cache,
        "acme/tiny-eagle3",
        {"config.json": source / "draft" / "config.json", "model.safetensors": source / "draft" / "model.safetensors"},
    )

    result = _run(["check", str(draft), "--target", "acme/tiny-target", "--format", "json"], cache)

    report = json.loads(result.stdout)
    fired = {f["rule"] for f in report["findings"]}
    # The cache's symlinks are not escapes, and the target's 4 layers are really read: aux id 5 is out.
    assert "SAFETY-SYMLINK-ESCAPE" not in fired
    assert "TARGET-AUX-LAYER-RANGE" in fired
    assert result.returncode == 1


def test_uncached_hub_target_offline_is_a_failing_finding(tmp_path: Path) -> None:
    build_draft(tmp_path / "draft", DraftSpec())

    result = _run(
        ["check", str(tmp_path / "draft"), "--target", "acme/not-cached", "--format", "json"], tmp_path / "empty-cache"
    )

    # The target is the check's own subject: what could not be read fails the check, with the reason.
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    [finding] = [f for f in report["findings"] if f["rule"] == "HUB-NOT-EXAMINED"]
    assert finding["severity"] == "error"
    assert "HF_HUB_OFFLINE is set" in finding["message"]
    assert "acme/not-cached" in finding["message"]
    assert "hf download acme/not-cached" in finding["hint"]
    assert "Traceback" not in result.stderr
