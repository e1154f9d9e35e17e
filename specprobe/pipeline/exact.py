"""Exact mode (``lint --exact`` / ``gate --exact``): each deployment's drafter, target and speculative
settings through its vLLM release's own code, one probe process per release
(``specprobe.engines.exact`` runs it; this module places the verdicts on the deployments).

It sits above ``specprobe.pipeline.gate``, whose ``resolve_model`` finds the drafter and target a
deployment names.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from specprobe.checkpoint.folder import load_checkpoint
from specprobe.deploy.engines import resolve_engine_version
from specprobe.engines.exact import (
    DEFAULT_TIMEOUT_S,
    ExactCase,
    case_from_checkpoint,
    exact_interpreters,
    run_cases,
    same_release,
)
from specprobe.findings import Finding
from specprobe.hfconfig import MAX_CONFIG_BYTES, ConfigError, parse_config_bytes
from specprobe.modelfiles import HubSession
from specprobe.pipeline.gate import resolve_model
from specprobe.rules import exact as rules
from specprobe.rules.exact import findings_for, sglang_static
from specprobe.untrusted.files import UntrustedInputError

__all__ = ["exact_for_deployments"]


def exact_for_deployments(report: Any, deployments: Sequence[Any], engine: Any = None,
                          *, timeout_s: float = DEFAULT_TIMEOUT_S, hub: HubSession | None = None) -> None:
    """``lint --exact`` / ``gate --exact``: each deployment's drafter, target and speculative settings through
    its vLLM release's own code; one probe process per release. Findings are placed on the deployment."""
    summary: list[dict[str, Any]] = report.extra.setdefault("exact", [])
    pending: dict[str, list[tuple[Any, ExactCase]]] = {}

    def note(deployment: Any, finding: Finding, entry: dict[str, Any]) -> None:
        summary.append(entry)
        report.add(deployment.locate(finding, "draft", "speculative", "command"))

    for index, deployment in enumerate(deployments):
        if deployment.command is None or deployment.engine_name is None or not deployment.draft:
            continue
        resolve_engine_version(deployment, engine)
        version = deployment.engine.version if deployment.engine is not None else None
        entry: dict[str, Any] = {"deployment": deployment.name, "engine": deployment.engine_name,
                                 "version": str(version) if version else None, "verdict": "static"}
        if deployment.engine_name == "sglang":
            entry["why"] = "SGLang's draft classes are not constructed here"
            note(deployment, sglang_static(str(version)), entry)
            continue
        draft = resolve_model(deployment, deployment.draft, "draft", hub)
        target = resolve_model(deployment, deployment.target, "target", hub)
        missing = [ref for ref in (draft, target) if ref is None or ref.files is None]
        if version is None or missing:
            why = "no engine version" if version is None else "; ".join(
                (ref.why_not or ref.spec) if ref is not None else "no target" for ref in missing)
            entry["why"] = why
            note(deployment, rules.UNAVAILABLE.finding(f"exact mode did not run: {why}; the verdict is static"), entry)
            continue
        assert draft is not None and target is not None and draft.files is not None and target.files is not None
        try:
            # The release's code sees the header shapes and config.json: a hub drafter needs no weights.
            checkpoint = load_checkpoint(draft.files)
            target_config = parse_config_bytes(target.files.read_file("config.json", max_bytes=MAX_CONFIG_BYTES)).value
        except (OSError, ConfigError, UntrustedInputError) as exc:
            entry["why"] = f"unreadable: {exc}"
            note(deployment, rules.UNAVAILABLE.finding(f"exact mode did not run: {exc}; the verdict is static"), entry)
            continue
        if checkpoint.config_raw is None or not checkpoint.tensors:
            entry["why"] = "no config.json or no safetensors tensors in the drafter"
            unusable = rules.UNAVAILABLE.finding(f"exact mode did not run: {entry['why']}; the verdict is static")
            note(deployment, unusable, entry)
            continue
        case = case_from_checkpoint(f"d{index}", checkpoint, target_config,
                                    method=deployment.method, speculative=deployment.speculative)
        pending.setdefault(str(version), []).append((deployment, case))
    for version, items in pending.items():
        interpreters = exact_interpreters("vllm", version)
        if not interpreters:
            for deployment, _case in items:
                note(deployment, rules.UNAVAILABLE.finding(
                    f"no interpreter of vLLM {version} here; the verdict for it is static",
                    hint=f"specprobe engines install vllm=={version}"),
                    {"deployment": deployment.name, "engine": "vllm", "version": version, "verdict": "static",
                     "why": "release not installed in the engine cache"})
            continue
        run = run_cases([case for _deployment, case in items], interpreters[0], timeout_s=timeout_s)
        matches = same_release(run.version, version)
        for deployment, case in items:
            entry = {"deployment": deployment.name, "engine": "vllm", "version": version, "verdict": "static",
                     "interpreter": run.interpreter, "reported": run.version}
            if not matches:
                entry["why"] = f"the interpreter has vLLM {run.version}, not {version}"
                note(deployment, rules.UNAVAILABLE.finding(f"{entry['why']}; the verdict is static"), entry)
                continue
            reply = run.cases[case.id]
            entry["verdict"] = "static" if reply.get("stage") == "unsupported" else "exact"
            summary.append(entry)
            for finding in findings_for(case, reply, run.version):
                finding.location = f"{deployment.draft}/{finding.location}" if finding.location else deployment.draft
                report.add(deployment.locate(finding, "draft", "speculative", "command"))
