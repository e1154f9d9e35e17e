"""`matrix --draft OWNER/NAME`: a hub drafter is classified through the hub reader as its folder is locally,
from config.json and safetensors headers read by byte range."""

from __future__ import annotations

from pathlib import Path

import pytest

from specprobe.compat.subjects import classify_draft
from specprobe.findings import SpecprobeError
from specprobe.modelfiles import HubSession
from specprobe.modelfiles.hub import MAX_REPO_BYTES
from tests.check.casebuild import build_draft_case, load_case
from tests.hub.conftest import hub_env, specprobe
from tests.hub.hubserver import HubServer, publish

# In-process runs ask the loopback hub (tests/hub/conftest.py).
pytestmark = pytest.mark.usefixtures("online_in_process")

LLAMA31_EAGLE3 = load_case("valid-specforge-llama31-8b")[0]["draft"]


def test_a_hub_drafter_is_classified_as_its_folder(hub: HubServer, tmp_path: Path) -> None:
    build_draft_case(tmp_path / "draft", LLAMA31_EAGLE3)
    publish(hub.root, "acme/eagle3", tmp_path / "draft")
    local = classify_draft(str(tmp_path / "draft"))
    online = classify_draft("acme/eagle3", hub=HubSession(endpoint=hub.url, cache_root=tmp_path / "cache"))
    assert local.format == "specforge"
    assert (online.format, online.architecture) == (local.format, local.architecture)
    assert online.label == "acme/eagle3"
    assert 0 < hub.served.bytes_by_repo["acme/eagle3"] <= MAX_REPO_BYTES
    assert hub.served.whole_weight_files() == []


def test_a_missing_hub_drafter_is_a_usage_error(hub: HubServer, tmp_path: Path) -> None:
    with pytest.raises(SpecprobeError):
        classify_draft("acme/absent", hub=HubSession(endpoint=hub.url, cache_root=tmp_path / "cache"))
    with pytest.raises(SpecprobeError, match="not a folder"):
        classify_draft(str(tmp_path / "nope"))


def test_matrix_cli_takes_a_hub_drafter(hub: HubServer, tmp_path: Path) -> None:
    build_draft_case(tmp_path / "draft", LLAMA31_EAGLE3)
    publish(hub.root, "acme/eagle3", tmp_path / "draft")
    env = hub_env(hub.url, tmp_path / "home")
    args = ["--engine", "vllm==0.33.0", "--format", "json"]
    local = specprobe(["matrix", "--draft", str(tmp_path / "draft"), *args], env)
    online = specprobe(["matrix", "--draft", "acme/eagle3", *args], env)
    assert online.code == local.code, online.stderr
    assert online.report["subject"]["draft_format"] == local.report["subject"]["draft_format"] == "specforge"
    assert [f["rule"] for f in online.report["findings"]] == [f["rule"] for f in local.report["findings"]]
