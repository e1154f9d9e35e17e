"""`specprobe check OWNER/NAME --target OWNER/NAME` against a hub-protocol server on loopback, driving the
real huggingface_hub client through HF_ENDPOINT, as a user or a CI job runs it."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from specprobe.demo.fixtures import DraftSpec, build_draft
from tests.hub.conftest import TOKEN, hub_env, specprobe
from tests.hub.hubserver import HubServer, publish, serve_hub

ENGINE = "vllm==0.33.0"
MiB = 1024 * 1024


def _verdict(report: dict) -> tuple:
    """A report as a verdict: ok, and each finding's rule, severity and location (messages name folders)."""
    return report["ok"], sorted((f["rule"], f["severity"], f.get("location")) for f in report["findings"])


def _publish_pair(hub: HubServer, drafter: tuple[Path, Path], name: str = "acme/eagle3", **settings) -> None:
    draft, target = drafter
    publish(hub.root, name, draft, settings.get("draft"))
    publish(hub.root, "acme/target", target, settings.get("target"))


def test_hub_verdict_equals_local_and_offline_rerun_equals_it(hub, big_drafter, tmp_path):
    draft, target = big_drafter
    _publish_pair(hub, big_drafter)
    env = hub_env(hub.url, tmp_path / "home")
    args = ["--engine", ENGINE, "--format", "json"]

    local = specprobe(["check", str(draft), "--target", str(target), *args], env)
    online = specprobe(["check", "acme/eagle3", "--target", "acme/target", *args], env)
    served = dict(hub.served.bytes_by_repo)
    requests_online = len(hub.served.requests)
    offline = specprobe(
        ["check", "acme/eagle3", "--target", "acme/target", *args], {**env, "HF_HUB_OFFLINE": "1"}
    )

    assert local.code == online.code == offline.code == 0, online.stdout + online.stderr
    assert _verdict(online.report) == _verdict(local.report) == _verdict(offline.report)
    # The commit judged is in the subject, the same offline.
    commit = online.report["subject"]["draft_commit"]
    assert len(commit) == 40 and offline.report["subject"]["draft_commit"] == commit
    assert online.report["subject"]["target_commit"] == offline.report["subject"]["target_commit"]
    # Only headers, d2t/t2d and JSON travelled: well under 4 MiB, never a weight file whole.
    assert sum(served.values()) <= 4 * MiB, served
    assert hub.served.whole_weight_files() == []
    assert (draft / "model.safetensors").stat().st_size > 800 * MiB
    # The offline run asked the hub nothing.
    assert len(hub.served.requests) == requests_online


def test_a_hub_that_lists_no_sizes_is_judged_alike_from_its_range_answers(hub, big_drafter, tmp_path):
    _publish_pair(hub, big_drafter, draft={"listing_sizes": False}, target={"listing_sizes": False})
    env = hub_env(hub.url, tmp_path / "home")
    args = ["--engine", ENGINE, "--format", "json"]
    local = specprobe(["check", str(big_drafter[0]), "--target", str(big_drafter[1]), *args], env)
    online = specprobe(["check", "acme/eagle3", "--target", "acme/target", *args], env)
    offline = specprobe(["check", "acme/eagle3", "--target", "acme/target", *args], {**env, "HF_HUB_OFFLINE": "1"})
    assert _verdict(online.report) == _verdict(local.report) == _verdict(offline.report), online.stdout
    assert hub.served.whole_weight_files() == []
    # A drafter smaller than the first header read: its end is found from the Range answer.
    tiny = build_draft(tmp_path / "tiny", DraftSpec(hidden_size=8, num_attention_heads=2, num_key_value_heads=1,
                                                     intermediate_size=16, vocab_size=64, draft_vocab_size=32))
    assert (tiny / "model.safetensors").stat().st_size < 16 * 1024
    publish(hub.root, "acme/tiny", tiny, {"listing_sizes": False})
    local = specprobe(["check", str(tiny), "--format", "json"], env)
    online = specprobe(["check", "acme/tiny", "--format", "json"], env)
    offline = specprobe(["check", "acme/tiny", "--format", "json"], {**env, "HF_HUB_OFFLINE": "1"})
    assert _verdict(online.report) == _verdict(local.report) == _verdict(offline.report), online.stdout


def test_text_output_names_the_commit_judged(hub, big_drafter, tmp_path):
    _publish_pair(hub, big_drafter)
    run = specprobe(["check", "acme/eagle3", "--target", "acme/target", "--engine", ENGINE],
                    hub_env(hub.url, tmp_path / "home"))
    assert run.code == 0, run.stdout + run.stderr
    assert "draft_commit=" in run.stdout and "target_commit=" in run.stdout


def test_lfs_redirects_are_followed_and_still_only_ranges_travel(repos, big_drafter, tmp_path):
    with serve_hub(repos, redirect_lfs=True) as hub:
        _publish_pair(hub, big_drafter)
        run = specprobe(["check", "acme/eagle3", "--target", "acme/target", "--engine", ENGINE, "--format", "json"],
                        hub_env(hub.url, tmp_path / "home"))
        assert run.code == 0, run.stdout + run.stderr
        assert any(path.startswith("/_lfs/") for _, path, _ in hub.served.requests)
        assert hub.served.whole_weight_files() == []
        assert sum(hub.served.bytes_by_repo.values()) <= 4 * MiB


def test_a_revision_is_judged_at_its_commit(hub, big_drafter, tmp_path):
    _publish_pair(hub, big_drafter, draft={"tags": {"v1": "main"}})
    env = hub_env(hub.url, tmp_path / "home")
    tagged = specprobe(["check", "acme/eagle3@v1", "--target", "acme/target", "--format", "json"], env)
    assert tagged.code == 0, tagged.stdout + tagged.stderr
    commit = tagged.report["subject"]["draft_commit"]
    by_commit = specprobe(["check", f"acme/eagle3@{commit}", "--target", "acme/target", "--format", "json"], env)
    assert _verdict(by_commit.report) == _verdict(tagged.report)
    missing = specprobe(["check", "acme/eagle3@no-such-branch", "--target", "acme/target", "--format", "json"], env)
    assert missing.code == 1
    [finding] = missing.report["findings"]
    assert finding["rule"] == "HUB-ACCESS" and "no-such-branch" in finding["message"]


@pytest.mark.parametrize("role", ["draft", "target"])
@pytest.mark.parametrize("kind", ["gated", "private"])
def test_gated_or_private_without_token_is_never_a_pass(hub, big_drafter, tmp_path, role, kind):
    _publish_pair(hub, big_drafter, **{role: {kind: True, "allowed_tokens": [TOKEN]}})
    home = tmp_path / "home"
    args = ["check", "acme/eagle3", "--target", "acme/target", "--engine", ENGINE, "--format", "json"]

    denied = specprobe(args, hub_env(hub.url, home))
    allowed = specprobe(args, hub_env(hub.url, home, HF_TOKEN=TOKEN))

    assert denied.code == 1
    [finding] = [f for f in denied.report["findings"] if f["rule"] == "HUB-ACCESS"]
    assert finding["severity"] == "error"
    assert "HF_TOKEN" in finding["message"] + finding["hint"]
    assert ("acme/eagle3" if role == "draft" else "acme/target") in finding["message"]
    assert allowed.code == 0, allowed.stdout + allowed.stderr
    assert "HUB-ACCESS" not in allowed.fired()
    # The token went to the hub (as huggingface_hub sends it) ...
    assert any(auth == "bearer" for _, _, auth in hub.served.requests)
    # ... and nowhere else: not in any output, format, log or cache file (name or content).
    outputs = [denied.stdout, denied.stderr, allowed.stdout, allowed.stderr]
    if (role, kind) == ("target", "gated"):  # every output format once (each run costs a start-up)
        for fmt in ("sarif", "junit", "github", "markdown", "text"):
            rerun = specprobe([*args[:-1], fmt], hub_env(hub.url, home, HF_TOKEN=TOKEN))
            outputs += [rerun.stdout, rerun.stderr]
    assert not any(TOKEN in text for text in outputs)
    for path in home.rglob("*"):
        assert TOKEN not in str(path)
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes()


def test_a_wrong_token_is_refused_without_being_printed(hub, big_drafter, tmp_path):
    _publish_pair(hub, big_drafter)
    wrong = "hf_thisTokenIsNotKnownToTheServer000"
    run = specprobe(["check", "acme/eagle3", "--target", "acme/target", "--format", "json"],
                    hub_env(hub.url, tmp_path / "home", HF_TOKEN=wrong))
    assert run.code == 1
    assert "HUB-ACCESS" in run.fired()
    assert wrong not in run.stdout + run.stderr


def test_a_missing_repository_is_a_finding_naming_it(hub, big_drafter, tmp_path):
    _publish_pair(hub, big_drafter)
    run = specprobe(["check", "acme/no-such-drafter", "--target", "acme/target", "--format", "json"],
                    hub_env(hub.url, tmp_path / "home"))
    assert run.code == 1
    [finding] = run.report["findings"]
    assert finding["rule"] == "HUB-ACCESS" and "acme/no-such-drafter" in finding["message"]
    assert "Traceback" not in run.stderr


def test_a_hanging_repository_ends_well_within_a_minute_and_is_not_a_pass(hub, big_drafter, tmp_path):
    # The drafter's repository answers nothing for 80 s; the default timeout (10 s, never retried) applies.
    _publish_pair(hub, big_drafter, draft={"delay_s": 80})
    run = specprobe(["check", "acme/eagle3", "--target", "acme/target", "--engine", ENGINE, "--format", "json"],
                    hub_env(hub.url, tmp_path / "home"), timeout=90)
    assert run.seconds < 30, run.seconds
    assert run.code == 1
    [finding] = run.report["findings"]
    assert finding["rule"] == "HUB-NOT-EXAMINED" and finding["severity"] == "error"
    assert "did not answer within 10 s" in finding["message"]


def test_an_unreachable_endpoint_is_one_clear_sentence(big_drafter, tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"  # nothing listens once the socket closes
    run = specprobe(["check", str(big_drafter[0]), "--target", "acme/target", "--format", "json"],
                    hub_env(closed, tmp_path / "home"))
    assert run.code == 1 and run.seconds < 30
    [finding] = [f for f in run.report["findings"] if f["rule"] == "HUB-NOT-EXAMINED"]
    assert "could not be reached" in finding["message"] and "HF_ENDPOINT" in finding["message"]
    assert "Error" not in finding["message"] and "Traceback" not in run.stderr


def test_a_pickle_only_repository_is_a_finding_and_nothing_of_it_is_fetched(hub, big_drafter, tmp_path):
    folder = tmp_path / "pickled"
    folder.mkdir()
    (folder / "config.json").write_bytes((big_drafter[0] / "config.json").read_bytes())
    with (folder / "pytorch_model.bin").open("wb") as handle:
        handle.truncate(700 * MiB)  # a sparse "pickle": GB on paper, nothing on disk, never opened
    publish(hub.root, "acme/pickled", folder)
    publish(hub.root, "acme/target", big_drafter[1])
    run = specprobe(["check", "acme/pickled", "--target", "acme/target", "--format", "json"],
                    hub_env(hub.url, tmp_path / "home"))
    local = specprobe(["check", str(folder), "--target", str(big_drafter[1]), "--format", "json"],
                      hub_env(hub.url, tmp_path / "home"))
    assert run.code == 1
    assert _verdict(run.report) == _verdict(local.report)
    assert not any(path.endswith(".bin") for _, path, *_ in hub.served.reads)


def test_a_hub_id_in_the_local_cache_needs_no_hub(big_drafter, tmp_path):
    """`hf download` left the drafter in the Hugging Face cache: read in place, with no endpoint at all."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    hub_cache = tmp_path / "home" / "hub"
    for repo_id, folder in (("acme/eagle3", big_drafter[0]), ("acme/target", big_drafter[1])):
        repo = hub_cache / ("models--" + repo_id.replace("/", "--"))
        (repo / "refs").mkdir(parents=True)
        (repo / "refs" / "main").write_text(commit)
        snapshot = repo / "snapshots" / commit
        snapshot.mkdir(parents=True)
        for path in folder.iterdir():
            os.link(path, snapshot / path.name)
    env = hub_env(None, tmp_path / "home", HF_HUB_OFFLINE="1")
    run = specprobe(["check", "acme/eagle3", "--target", "acme/target", "--engine", ENGINE, "--format", "json"], env)
    local = specprobe(["check", str(big_drafter[0]), "--target", str(big_drafter[1]), "--engine", ENGINE,
                       "--format", "json"], env)
    assert run.code == 0, run.stdout + run.stderr
    assert _verdict(run.report) == _verdict(local.report)
    assert run.report["subject"]["draft_commit"] == commit


def test_hub_off_in_the_configuration_never_asks_the_hub(hub, big_drafter, tmp_path):
    _publish_pair(hub, big_drafter)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.specprobe]\nhub = "off"\n')
    run = specprobe(["check", "acme/eagle3", "--target", "acme/target", "--format", "json",
                     "--config", str(project / "pyproject.toml")], hub_env(hub.url, tmp_path / "home"))
    assert run.code == 1
    assert hub.served.requests == []
    assert json.loads(run.stdout)["findings"][0]["rule"] == "HUB-NOT-EXAMINED"
