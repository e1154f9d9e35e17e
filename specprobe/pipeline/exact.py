"""Exact mode (``lint --exact`` / ``gate --exact``): each deployment's drafter, target and speculative
settings through its vLLM or SGLang release's own code, one probe process per release
(``specprobe.engines.exact`` runs it; this module places the verdicts on the deployments).

It sits above ``specprobe.pipeline.gate``, whose ``resolve_model`` finds the drafter and target a
deployment names.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from specprobe.checkpoint.folder import load_checkpoint
from specprobe.deploy.engines import resolve_engine_version
from specprobe.engines.exact import (
    DEFAULT_TIMEOUT_S,
    SGLANG_SERVER_ARGS,
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
from specprobe.rules.exact import findings_for_engine
from specprobe.untrusted.files import UntrustedInputError

__all__ = ["exact_for_deployments", "sglang_launch_settings", "vllm_environment"]


def sglang_launch_settings(deployment: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The ServerArgs fields (``--context-length`` ...) and SGLANG_* variables a deployment launches SGLang with,
    as exact mode hands them to the engine (the other settings stay at the engine's defaults)."""
    fields: dict[str, Any] = {}
    command = deployment.command
    for name in SGLANG_SERVER_ARGS:
        value = command.get("--" + name.replace("_", "-")) if command is not None else None
        if value is None:
            continue
        try:
            fields[name] = int(value) if name in ("context_length",) or name.startswith("speculative_num") or \
                name == "speculative_eagle_topk" else str(value)
        except ValueError:
            continue  # not a number: the schema lint reports the value, the engine would refuse to parse it
    env = {**dict(deployment.env or {}), **(dict(command.env) if command is not None else {})}
    return fields, {key: str(value) for key, value in env.items() if key.startswith("SGLANG_")}


def vllm_environment(deployment: Any) -> dict[str, str]:
    """The VLLM_* variables a deployment launches vLLM with (its file's environment and the command's prefix)."""
    command = deployment.command
    env = {**dict(deployment.env or {}), **(dict(command.env) if command is not None else {})}
    return {key: str(value) for key, value in env.items() if key.startswith("VLLM_")}


def exact_for_deployments(report: Any, deployments: Sequence[Any], engine: Any = None,
                          *, timeout_s: float = DEFAULT_TIMEOUT_S, hub: HubSession | None = None) -> None:
    """``lint --exact`` / ``gate --exact``: each deployment's drafter, target and speculative settings through
    its vLLM or SGLang release's own code; one probe process per release. Findings are placed on the deployment."""
    summary: list[dict[str, Any]] = report.extra.setdefault("exact", [])
    pending: dict[tuple[str, str, str], list[tuple[Any, ExactCase]]] = {}

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
        if deployment.engine_name == "sglang":
            server_args, env = sglang_launch_settings(deployment)
            group = ""  # SGLang reads each case's SGLANG_* in the one process
        else:
            server_args, env = {}, vllm_environment(deployment)
            group = json.dumps(env, sort_keys=True)  # vLLM reads them once per process
        case = case_from_checkpoint(f"d{index}", checkpoint, target_config, method=deployment.method,
                                    speculative=deployment.speculative, server_args=server_args, env=env)
        pending.setdefault((str(deployment.engine_name), str(version), group), []).append((deployment, case))
    for (engine_name, version, _group), items in pending.items():
        name = "SGLang" if engine_name == "sglang" else "vLLM"
        interpreters = exact_interpreters(engine_name, version)
        if not interpreters:
            for deployment, _case in items:
                note(deployment, rules.UNAVAILABLE.finding(
                    f"no interpreter of {name} {version} here; the verdict for it is static",
                    hint=f"specprobe engines install {engine_name}=={version}"),
                    {"deployment": deployment.name, "engine": engine_name, "version": version, "verdict": "static",
                     "why": "release not installed in the engine cache"})
            continue
        run = run_cases([case for _deployment, case in items], interpreters[0], timeout_s=timeout_s,
                        engine=engine_name)
        matches = same_release(run.version, version)
        for deployment, case in items:
            entry = {"deployment": deployment.name, "engine": engine_name, "version": version, "verdict": "static",
                     "interpreter": run.interpreter, "reported": run.version}
            if not matches:
                entry["why"] = f"the interpreter has {name} {run.version}, not {version}"
                note(deployment, rules.UNAVAILABLE.finding(f"{entry['why']}; the verdict is static"), entry)
                continue
            reply = run.cases[case.id]
            entry["verdict"] = "static" if reply.get("stage") == "unsupported" else "exact"
            summary.append(entry)
            for finding in findings_for_engine(engine_name, case, reply, run.version, deployment=True):
                finding.location = f"{deployment.draft}/{finding.location}" if finding.location else deployment.draft
                report.add(deployment.locate(finding, "draft", "speculative", "command"))
