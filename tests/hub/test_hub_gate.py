"""`gate` and `lint` over deployments that name hub ids (Kubernetes, shell, a launch command): the drafter is
examined where it lives and gets the same verdict as its local folder; each repository is read once."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

from specprobe.demo.fixtures import build_draft
from tests.hub.conftest import hub_env, llama8b_sized, llama8b_target, specprobe
from tests.hub.hubserver import HubServer, publish


def _models(hub: HubServer, tmp_path: Path) -> dict[str, Path]:
    """A good and a broken (aux layer 40 of a 32-layer target) drafter and their target, published with a
    tag ``v1`` on each, and their local folders."""
    good = build_draft(tmp_path / "local" / "good", llama8b_sized())
    spec = llama8b_sized()
    spec.aux_layer_ids = [2, 16, 40]
    broken = build_draft(tmp_path / "local" / "broken", spec)
    target = llama8b_target(tmp_path / "local" / "target")
    for name, folder in (("acme/eagle3-good", good), ("acme/eagle3-broken", broken), ("acme/llama-target", target)):
        publish(hub.root, name, folder, {"tags": {"v1": "main"}})
    return {"good": good, "broken": broken, "target": target}


def _k8s(target: str, draft: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: apps/v1
        kind: Deployment
        metadata:
          name: llm
        spec:
          template:
            spec:
              containers:
                - name: vllm
                  image: vllm/vllm-openai:v0.33.0
                  args:
                    - {target}
                    - --revision
                    - v1
                    - --speculative-config
                    - '{{"method": "eagle3", "model": "{draft}", "revision": "v1", "num_speculative_tokens": 3}}'
        """)


def _script(target: str, draft: str) -> str:
    return textwrap.dedent(f"""\
        #!/bin/sh
        python -m sglang.launch_server --model-path {target} --revision v1 \\
          --speculative-algorithm EAGLE3 --speculative-draft-model-path {draft} \\
          --speculative-draft-model-revision v1 --speculative-num-steps 3 --speculative-eagle-topk 1 \\
          --speculative-num-draft-tokens 4
        """)


def _rules(report: dict) -> set[tuple[str, str]]:
    return {(f["rule"], f["severity"]) for f in report["findings"] if f["rule"] != "DEPLOY-ENGINE-VERSION"}


def test_kubernetes_and_shell_deployments_naming_hub_ids_are_examined(hub, tmp_path):
    local = _models(hub, tmp_path)
    env = hub_env(hub.url, tmp_path / "home")
    files = tmp_path / "deploy"
    files.mkdir()
    for form, write in (("k8s", _k8s), ("sh", _script)):
        for kind in ("good", "broken"):
            (files / f"hub-{kind}.{form}").write_text(write("acme/llama-target", f"acme/eagle3-{kind}"))
            (files / f"local-{kind}.{form}").write_text(write(str(local["target"]), str(local[kind])))
    for form in ("k8s", "sh"):
        suffix = ".yaml" if form == "k8s" else ".sh"
        for kind in ("good", "broken"):
            hub_file = (files / f"hub-{kind}.{form}").rename(files / f"hub-{kind}-{form}{suffix}")
            local_file = (files / f"local-{kind}.{form}").rename(files / f"local-{kind}-{form}{suffix}")
            on_hub = specprobe(["gate", str(hub_file), "--format", "json"], env)
            on_disk = specprobe(["gate", str(local_file), "--format", "json"], env)
            fired = {rule for rule, _ in _rules(on_hub.report)}
            assert "DEPLOY-NOT-EXAMINED" not in fired and not fired & {"HUB-ACCESS", "HUB-NOT-EXAMINED"}, (
                form, kind, on_hub.stdout)
            assert _rules(on_hub.report) == _rules(on_disk.report), (form, kind)
            assert on_hub.code == on_disk.code == (1 if kind == "broken" else 0), (form, kind, on_hub.stdout)
            if kind == "broken":
                assert "TARGET-AUX-LAYER-RANGE" in fired
    # The revisions named in the files were the ones asked for.
    asked = [path for _, path, _ in hub.served.requests if path.startswith("/api/models/")]
    assert asked and all(path.split("?")[0].endswith("/revision/v1") for path in asked)


def test_lint_of_a_launch_command_naming_hub_ids(hub, tmp_path):
    _models(hub, tmp_path)
    config = json.dumps({"method": "eagle3", "model": "acme/eagle3-broken", "num_speculative_tokens": 3})
    run = specprobe(["lint", "--format", "json", "--", "vllm", "serve", "acme/llama-target",
                     "--speculative-config", config], hub_env(hub.url, tmp_path / "home"))
    assert run.code == 1
    fired = {f["rule"] for f in run.report["findings"]}
    assert "TARGET-AUX-LAYER-RANGE" in fired and "DEPLOY-NOT-EXAMINED" not in fired


def test_a_fleet_reads_each_repository_once(hub, tmp_path):
    _models(hub, tmp_path)
    documents = [
        _k8s("acme/llama-target", f"acme/eagle3-{kind}").replace("name: llm", f"name: llm-{index}")
        for index, kind in enumerate(["good", "broken"] * 15)
    ]
    path = tmp_path / "fleet.yaml"
    path.write_text("---\n".join(documents))
    run = specprobe(["gate", str(path), "--format", "json"], hub_env(hub.url, tmp_path / "home"))
    assert run.code == 1
    assert len(run.report["deployments"]) == 30
    listings = Counter(path.split("/revision/")[0] for _, path, _ in hub.served.requests if "/api/models/" in path)
    assert listings == {f"/api/models/acme/{name}": 1 for name in ("eagle3-good", "eagle3-broken", "llama-target")}
    reads = Counter((repo, path, start) for repo, path, start, _end, _size in hub.served.reads)
    assert max(reads.values()) == 1, reads


def test_gated_drafter_in_a_gate_is_an_error_naming_hf_token(hub, tmp_path):
    local = _models(hub, tmp_path)
    publish(hub.root, "acme/eagle3-gated", local["good"], {"gated": True})
    path = tmp_path / "gated.yaml"
    path.write_text(_k8s("acme/llama-target", "acme/eagle3-gated").replace('"revision": "v1", ', ""))
    run = specprobe(["gate", str(path), "--format", "json"], hub_env(hub.url, tmp_path / "home"))
    assert run.code == 1
    [finding] = [f for f in run.report["findings"] if f["rule"] == "HUB-ACCESS"]
    assert "HF_TOKEN" in finding["message"] and "acme/eagle3-gated" in finding["message"]
    assert finding["file"] == str(path) and finding["line"]


def test_unreadable_hub_drafter_warns_and_hub_required_fails(hub, tmp_path):
    local = _models(hub, tmp_path)
    publish(hub.root, "acme/eagle3-slow", local["good"], {"delay_s": 30})
    path = tmp_path / "slow.yaml"
    path.write_text(_k8s("acme/llama-target", "acme/eagle3-slow").replace('"revision": "v1", ', ""))
    env = hub_env(hub.url, tmp_path / "home", SPECPROBE_HUB_TIMEOUT="1")
    optional = specprobe(["gate", str(path), "--format", "json"], env)
    [warning] = [f for f in optional.report["findings"] if f["rule"] == "HUB-NOT-EXAMINED"]
    assert warning["severity"] == "warning" and optional.code == 0
    assert specprobe(["gate", str(path), "--strict"], env).code == 1
    project = tmp_path / "pyproject.toml"
    project.write_text('[tool.specprobe]\nhub = "required"\n')
    required = specprobe(["gate", str(path), "--format", "json", "--config", str(project)], env)
    assert required.code == 1
    assert [f["severity"] for f in required.report["findings"] if f["rule"] == "HUB-NOT-EXAMINED"] == ["error"]
