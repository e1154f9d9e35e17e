"""A hint is derived from the facts its finding judges by, so it can never recommend what the finding
rejects: for every release with a shipped snapshot and every architecture a drafter may declare,
LAYOUT-ARCH-UNRESOLVED's hint names neither the declared class nor the class vLLM rewrites it to, and
every class it does name is one the check accepts for that release."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from specprobe.demo.fixtures import DraftSpec
from specprobe.pipeline.check import run_check
from specprobe.schema.store import known_versions
from tests.fix.builders import make_draft, make_target

ARCHITECTURES = (
    "LlamaForCausalLM",
    "LlamaForCausalLMEagle3",
    "Eagle3LlamaForCausalLM",
    "EagleLlamaForCausalLM",
    "MistralForCausalLM",
)


def _declaring(architecture: str) -> Any:
    def edit(spec: DraftSpec, config: dict[str, Any], tensors: dict[str, Any]) -> None:
        config["architectures"] = [architecture]

    return edit


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Path]]:
    root = tmp_path_factory.mktemp("hints")
    target = make_target(root / "target")
    spec = DraftSpec(draft_format="vllm-native")
    drafts = {arch: make_draft(root / arch, spec, _declaring(arch)) for arch in ARCHITECTURES}
    return target, drafts


def _rejected(message: str, declared: str) -> set[str]:
    named = set(re.findall(r"rewrites \S+ to (\S+)", message))
    return {declared, *named}


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_no_architecture_hint_recommends_what_it_rejects(engine: str, folders: tuple[Path, dict[str, Path]]) -> None:
    target, drafts = folders
    seen = 0
    for version in known_versions(engine):
        for declared, draft in drafts.items():
            report = run_check(draft, target=str(target), engine=f"{engine}=={version}")
            for finding in report.findings:
                if finding.rule != "LAYOUT-ARCH-UNRESOLVED":
                    continue
                seen += 1
                assert finding.hint, finding
                offered = set(re.findall(r"\b\w*Eagle3\w*\b", finding.hint.split(":", 1)[-1]))
                assert not offered & _rejected(finding.message, declared), (version, declared, finding.hint)
                for name in offered:  # every class the hint offers passes the same rule for that release
                    accepted = run_check(drafts.get(name) or _redeclared(draft, name), target=str(target),
                                         engine=f"{engine}=={version}")
                    assert "LAYOUT-ARCH-UNRESOLVED" not in accepted.fired(), (version, declared, name)
    assert seen > 0  # the rule fires somewhere, so the assertions above ran


def _redeclared(draft: Path, name: str) -> Path:
    folder = draft.parent / f"{name}-offered"
    if not folder.exists():
        make_draft(folder, DraftSpec(draft_format="vllm-native"), _declaring(name))
    return folder
