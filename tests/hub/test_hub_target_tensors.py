"""`smoke --hidden-states --target OWNER/NAME`: the target's few tensors read from the hub alone.

A small random target (hidden 32, vocab 256, two shards with an index and a megabyte of other weights)
and a drafter without its own embedding; the dump's last-layer states are built to predict its tokens
through the target's lm_head, so that the target check reads the final norm and lm_head too. The hub is
the loopback server of ``hubserver.py``, spoken to by the real huggingface_hub client; its byte counters
show what travelled.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from safetensors.numpy import save_file

from specprobe.demo.fixtures import DraftSpec, build_draft, target_config, write_json
from tests.hub.conftest import TOKEN, hub_env, specprobe
from tests.hub.hubserver import HubServer, publish

torch = pytest.importorskip("torch")

from tests.smoke.dump_writer import AUX, HIDDEN, VOCAB, sample_path, save_record, synthetic_record  # noqa: E402

REPO = "org/target"
# A weight no read may touch: 1 MiB of float32 in each shard.
FILLER = (1024, 256)


def build_target(folder: Path, *, tie: bool = False, prefix: str = "model.") -> dict[str, np.ndarray]:
    """Two shards and an index: embedding + filler in the first, filler + norm + lm_head in the second."""
    folder.mkdir(parents=True)
    rng = np.random.default_rng(7)
    tensors = {
        f"{prefix}embed_tokens.weight": rng.standard_normal((VOCAB, HIDDEN), dtype=np.float32),
        f"{prefix}layers.0.mlp.up_proj.weight": rng.standard_normal(FILLER, dtype=np.float32),
        f"{prefix}layers.1.mlp.up_proj.weight": rng.standard_normal(FILLER, dtype=np.float32),
        f"{prefix}norm.weight": (1.0 + 0.1 * rng.standard_normal(HIDDEN)).astype(np.float32),
    }
    if not tie:
        tensors["lm_head.weight"] = rng.standard_normal((VOCAB, HIDDEN), dtype=np.float32)
    names = sorted(tensors)
    first = {n: tensors[n] for n in names if "embed" in n or "layers.0" in n}
    second = {n: tensors[n] for n in names if n not in first}
    shards = {"model-00001-of-00002.safetensors": first, "model-00002-of-00002.safetensors": second}
    weight_map = {}
    for shard, part in shards.items():
        save_file(part, str(folder / shard))
        weight_map.update(dict.fromkeys(part, shard))
    write_json(folder / "model.safetensors.index.json", {"metadata": {}, "weight_map": weight_map})
    extra = {"tie_word_embeddings": tie}
    write_json(folder / "config.json", target_config(hidden_size=HIDDEN, vocab_size=VOCAB, num_hidden_layers=4,
                                                     extra=extra))
    return tensors


def build_drafter(folder: Path) -> Path:
    """An EAGLE-3 drafter without embed_tokens: it borrows the target's."""
    spec = DraftSpec(hidden_size=HIDDEN, num_attention_heads=2, num_key_value_heads=1, intermediate_size=64,
                     vocab_size=VOCAB, draft_vocab_size=64, aux_layer_ids=list(AUX), embed_tokens=False)
    return build_draft(folder, spec)


@torch.inference_mode()
def build_dump(folder: Path, draft: Path, target: Path, head: np.ndarray, samples: int = 3) -> Path:
    """SpecForge records whose responses are the drafter's own teacher-forced greedy tokens (each one what the
    drafter, with the target's embedding, predicts from the data before it), so that the figure depends on
    the embedding read: every round's first draft is accepted with the right one. The last-layer states
    predict each next token through ``head``, so that the target check passes (greedy data)."""
    from specprobe.smoke.offline import OfflineOptions, load_offline_drafter, target_facts
    from specprobe.smoke.reference import DrafterRunner

    options = OfflineOptions(draft=draft, hidden_states=folder, target=str(target))
    drafter = load_offline_drafter(options, target_facts(str(target)), torch.float32)
    weight = torch.from_numpy(head)
    for index in range(samples):
        record = synthetic_record(length=40, prompt=8, seed=index)
        # Small aux states: the drafter's residual stream starts from them, and large ones would decide its
        # predictions whatever the embedding.
        record["aux_hidden_state"] *= 0.01
        ids, aux = record["input_ids"], record["aux_hidden_state"][0]
        for p in range(8, ids.shape[0] - 1):
            runner = DrafterRunner(drafter, 1, 64, "cpu")
            logits, _ = runner.step(ids[None, 1 : p + 1], drafter.combine_aux(aux[None, :p]), torch.arange(p)[None],
                                    torch.ones(1, p, dtype=torch.bool))
            ids[p + 1] = drafter.to_target_ids(logits[:, -1].argmax(-1))[0]
        record["hidden_state"] = (weight[torch.cat([ids[1:], ids[:1]])] * 4)[None].clone()
        save_record(record, sample_path(folder, index))
    return folder


@pytest.fixture
def pair(tmp_path: Path, repos: Path) -> dict[str, Any]:
    target = tmp_path / "target"
    tensors = build_target(target)
    publish(repos, REPO, target)
    draft = build_drafter(tmp_path / "draft")
    return {
        "target": target,
        "tensors": tensors,
        "draft": draft,
        "dump": build_dump(tmp_path / "dump", draft, target, tensors["lm_head.weight"]),
        "home": tmp_path / "hf-home",
    }


def _smoke(pair: dict[str, Any], target: str, env: dict[str, str], *extra: str):
    return specprobe(["smoke", "--draft", str(pair["draft"]), "--hidden-states", str(pair["dump"]), "--target", target,
                      "-k", "3", "--format", "json", "--no-progress", *extra], env, timeout=300)


FIGURES = ("mean_acceptance_length", "acceptance_rate", "per_position", "drafts", "accepted_tokens", "samples",
           "tokens", "target_check")


def _wanted_bytes(folder: Path, tensors: list[str]) -> int:
    """What reading ``tensors`` must cost: config.json, the index, and per shard holding one of them its
    8-byte length, its header and those tensors' bytes."""
    index = json.loads((folder / "model.safetensors.index.json").read_text())["weight_map"]
    total = (folder / "config.json").stat().st_size + (folder / "model.safetensors.index.json").stat().st_size
    for shard in sorted({index[t] for t in tensors}):
        raw = (folder / shard).read_bytes()
        length = int.from_bytes(raw[:8], "little")
        header = json.loads(raw[8 : 8 + length])
        total += 8 + length + sum(header[t]["data_offsets"][1] - header[t]["data_offsets"][0]
                                  for t in tensors if index[t] == shard)
    return total


def _offline_run_equals(pair: dict[str, Any], hub: Any, local: Any) -> None:
    """With HF_HUB_OFFLINE=1, the hub target gives ``local``'s figures and asks the hub nothing."""
    hub.served.reset()
    offline = _smoke(pair, REPO, hub_env(hub.url, pair["home"], HF_HUB_OFFLINE="1"))
    assert offline.code == 0, offline.stderr
    for key in FIGURES:
        assert offline.report[key] == local.report[key], key
    assert hub.served.requests == []


def test_hub_target_gives_the_local_figure_reading_only_its_tensors(pair: dict[str, Any], hub: HubServer) -> None:
    env = hub_env(hub.url, pair["home"])
    local = _smoke(pair, str(pair["target"]), env)
    assert local.code == 0, local.stderr
    assert hub.served.requests == []
    online = _smoke(pair, REPO, {**env, "HF_TOKEN": TOKEN})
    assert online.code == 0, online.stderr
    assert {auth for method, _, auth in hub.served.requests} == {"bearer"}  # sent, as huggingface_hub sends it
    for key in FIGURES:
        assert online.report[key] == local.report[key], key
    assert isinstance(local.report["target_check"], dict) and local.report["target_check"]["agreement"] > 0.9
    # The figure depends on the embedding read: the drafter's own data is accepted well beyond chance.
    assert local.report["drafts"] > 0 and local.report["mean_acceptance_length"] > 1.8
    # Only config.json, the index, both headers and the three tensors travelled: never a whole shard, never
    # a byte of the filler weights.
    used = ["model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"]
    assert hub.served.bytes_by_repo[REPO] == _wanted_bytes(pair["target"], used)
    assert hub.served.whole_weight_files() == []
    shard_size = (pair["target"] / "model-00001-of-00002.safetensors").stat().st_size
    assert hub.served.bytes_by_repo[REPO] < shard_size
    reads = [(start, end) for _, path, start, end, _ in hub.served.reads if path.endswith(".safetensors")]
    assert all(end - start + 1 <= VOCAB * HIDDEN * 4 for start, end in reads), reads
    assert TOKEN not in online.stdout + online.stderr

    # Offline, from what the first run kept: the same figure and no request at all.
    _offline_run_equals(pair, hub, local)
    # The kept tensors are under specprobe's hub cache, named by hashes, never in the user's folders.
    kept = list((pair["home"] / "specprobe-hub").rglob("tensors/*"))
    assert len(kept) == 3 and all("embed" not in p.name for p in kept)
    for path in (pair["home"] / "specprobe-hub").rglob("*"):
        assert TOKEN not in str(path) and (not path.is_file() or TOKEN.encode() not in path.read_bytes())
    assert sorted(p.name for p in pair["target"].iterdir()) == sorted(p.name for p in (hub.root / REPO).iterdir())


def test_another_embedding_gives_another_figure(tmp_path: Path, pair: dict[str, Any], hub: HubServer) -> None:
    """The control of the test above: the same target with another embedding (same shapes, same head) is not
    the drafter's, and the figure drops, so equal figures do say that the same embedding was read."""
    from safetensors.numpy import load_file

    other = tmp_path / "other"
    other.mkdir()
    for path in pair["target"].iterdir():
        (other / path.name).write_bytes(path.read_bytes())
    shard = other / "model-00001-of-00002.safetensors"
    tensors = load_file(str(shard))
    tensors["model.embed_tokens.weight"] = np.random.default_rng(99).standard_normal((VOCAB, HIDDEN), dtype=np.float32)
    save_file(tensors, str(shard))
    publish(hub.root, "org/other", other)
    env = hub_env(hub.url, pair["home"])
    own, foreign = _smoke(pair, REPO, env), _smoke(pair, "org/other", env)
    assert own.code == 0 and foreign.code == 0, foreign.stderr
    assert foreign.report["mean_acceptance_length"] < own.report["mean_acceptance_length"] - 0.5


def test_a_tensor_over_the_limit_is_refused_before_it_is_asked(pair: dict[str, Any], hub: HubServer) -> None:
    run = _smoke(pair, REPO, hub_env(hub.url, pair["home"]), "--max-target-tensor-bytes", "4096")
    assert run.code == 2, run.stdout
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "model.embed_tokens.weight" in lines[0] and "32768 bytes" in lines[0] and "4096-byte limit" in lines[0]
    assert "--max-target-tensor-bytes" in lines[0]
    # The index and one header were read; not one byte of the tensor.
    assert hub.served.bytes_by_repo[REPO] == _wanted_bytes(pair["target"], []) + _header_bytes(
        pair["target"] / "model-00001-of-00002.safetensors")


def _header_bytes(path: Path) -> int:
    return 8 + int.from_bytes(path.read_bytes()[:8], "little")


def test_a_short_range_answer_is_one_line_not_a_figure(tmp_path: Path, pair: dict[str, Any], hub: HubServer) -> None:
    # A server that answers each Range with at most 1000 bytes (a 206 saying so): the header reads fit,
    # the 32 kB embedding does not.
    publish(hub.root, "org/short", pair["target"], {"range_cap": 1000})
    run = _smoke(pair, "org/short", hub_env(hub.url, pair["home"]))
    assert run.code == 2, run.stdout
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr, run.stderr
    assert "sent 1000 of the 32768 bytes" in run.stderr
    assert not list((pair["home"] / "specprobe-hub").rglob("tensors/*")), "a short answer was kept"


def test_a_shard_shorter_than_its_header_says_is_one_line(tmp_path: Path, pair: dict[str, Any], hub: HubServer) -> None:
    cut = tmp_path / "cut"
    cut.mkdir()
    for path in pair["target"].iterdir():
        data = path.read_bytes()
        if path.name == "model-00001-of-00002.safetensors":
            data = data[: _header_bytes(path) + 100]  # the header, and 100 bytes of data
        (cut / path.name).write_bytes(data)
    publish(hub.root, "org/cut", cut)
    for target in ("org/cut", str(cut)):
        run = _smoke(pair, target, hub_env(hub.url, pair["home"]))
        assert run.code == 2, (target, run.stdout)
        assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr, run.stderr
        assert "past the end" in run.stderr, run.stderr


@pytest.mark.parametrize(("settings", "words"), [
    ({"gated": True, "allowed_tokens": ["hf_someoneElse"]}, "gated repository"),
    ({"private": True, "allowed_tokens": ["hf_someoneElse"]}, "not found on the hub, or it is private"),
    (None, "not found on the hub"),
])
def test_a_refused_target_is_one_line_with_exit_2(pair: dict[str, Any], hub: HubServer, settings, words) -> None:
    repo = "org/refused"
    if settings is not None:
        publish(hub.root, repo, pair["target"], settings)
    run = _smoke(pair, repo, hub_env(hub.url, pair["home"], HF_TOKEN=TOKEN))
    assert run.code == 2, run.stdout
    assert len(run.stderr.strip().splitlines()) == 1 and "Traceback" not in run.stderr, run.stderr
    assert words in run.stderr and "--target org/refused" in run.stderr
    assert TOKEN not in run.stdout + run.stderr
    assert hub.served.whole_weight_files() == []


def test_a_missing_revision_is_one_line(pair: dict[str, Any], hub: HubServer) -> None:
    run = _smoke(pair, f"{REPO}@no-such-branch", hub_env(hub.url, pair["home"]))
    assert run.code == 2 and len(run.stderr.strip().splitlines()) == 1, run.stderr
    assert "has no revision 'no-such-branch'" in run.stderr and "Traceback" not in run.stderr


def test_offline_without_the_cache_is_one_line(pair: dict[str, Any], hub: HubServer) -> None:
    run = _smoke(pair, REPO, hub_env(hub.url, pair["home"], HF_HUB_OFFLINE="1"))
    assert run.code == 2 and "HF_HUB_OFFLINE" in run.stderr, run.stderr
    assert len(run.stderr.strip().splitlines()) == 1
    assert hub.served.requests == []


def test_a_target_in_the_hugging_face_cache_is_read_there(pair: dict[str, Any], hub: HubServer) -> None:
    """`hf download` left the whole target in HF_HOME: offline, it is read in place, with no request."""
    import subprocess
    import sys

    env = hub_env(hub.url, pair["home"])
    script = f"from huggingface_hub import snapshot_download; print(snapshot_download({REPO!r}))"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert Path(done.stdout.strip()).is_dir()
    local = _smoke(pair, str(pair["target"]), env)
    _offline_run_equals(pair, hub, local)
    assert not list((pair["home"] / "specprobe-hub").rglob("tensors/*")), "read from the HF cache, not kept again"


def test_without_last_layer_states_only_the_embedding_travels(tmp_path: Path, pair: dict[str, Any],
                                                              hub: HubServer) -> None:
    """A dump without the target's last-layer states has nothing to put through its head: of the target,
    only config.json, the index, one header and the embedding are read."""
    headless = tmp_path / "headless"
    for index, path in enumerate(sorted(pair["dump"].rglob("data_*.ckpt"))):
        record = torch.load(path, weights_only=True)
        del record["hidden_state"]
        save_record(record, sample_path(headless, index))
    run = specprobe(["smoke", "--draft", str(pair["draft"]), "--hidden-states", str(headless), "--target", REPO,
                     "-k", "3", "--format", "json", "--no-progress"], hub_env(hub.url, pair["home"]), timeout=300)
    assert run.code == 0, run.stderr
    assert run.report["target_check"] == "no last-layer states in the dump or head in the target"
    assert hub.served.bytes_by_repo[REPO] == _wanted_bytes(pair["target"], ["model.embed_tokens.weight"])


def test_a_hub_whose_listing_gives_no_sizes(pair: dict[str, Any], hub: HubServer) -> None:
    """Shard sizes learnt from the Range answers (Content-Range), kept for the offline re-run."""
    publish(hub.root, "org/nosizes", pair["target"], {"listing_sizes": False})
    env = hub_env(hub.url, pair["home"])
    local, online = _smoke(pair, str(pair["target"]), env), _smoke(pair, "org/nosizes", env)
    assert online.code == 0, online.stderr
    hub.served.reset()
    offline = _smoke(pair, "org/nosizes", {**env, "HF_HUB_OFFLINE": "1"})
    assert offline.code == 0, offline.stderr
    for key in FIGURES:
        assert online.report[key] == local.report[key] == offline.report[key], key
    assert hub.served.requests == []
