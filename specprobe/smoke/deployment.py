"""`gate --smoke`: measure acceptance for the deployments of a manifest, against the thresholds of its
``smoke`` table: a deployment that names a server ``url`` has its engine's counters read
(``smoke.counters``), one with a ``device`` and local target and drafter runs the reference
implementation (``smoke.runner``).

The pipeline's gate (``specprobe.pipeline.gate``) takes this as its ``measure`` step: measuring sits
above the pipeline (the reference run checks the drafter first, with the pipeline's check), so the
gate never imports it.
"""

from __future__ import annotations

from collections.abc import Sequence

from specprobe.deploy import rules as deploy_rules
from specprobe.deploy.model import Deployment
from specprobe.findings import Finding, SpecprobeError
from specprobe.pipeline.gate import resolve_model
from specprobe.rules import smoke as smoke_rules
from specprobe.smoke.counters import ServerOptions, run_server
from specprobe.smoke.runner import SmokeOptions, run_reference

__all__ = ["smoke_deployment", "smoke_findings"]


def smoke_deployment(deployment: Deployment) -> list[Finding]:
    """Measure acceptance for a deployment that names a server ``url`` (its counters are read) or a
    ``device`` with local target and drafter (the reference implementation runs; needs the smoke
    extra). The thresholds come from the manifest's ``smoke`` table. What cannot be measured is a
    not-examined finding, so that --smoke never silently passes."""
    thresholds = deployment.smoke
    min_length = thresholds.get("min_mean_acceptance_length")
    max_prompts = int(thresholds["max_prompts"]) if "max_prompts" in thresholds else None
    tokens = thresholds.get("num_speculative_tokens") or deployment.speculative.get("num_speculative_tokens") or 3
    target = resolve_model(deployment, deployment.target, "target")
    draft = resolve_model(deployment, deployment.draft, "draft")
    try:
        if deployment.url:
            options = ServerOptions(
                url=deployment.url, min_acceptance_length=min_length, max_prompts=max_prompts, progress=False
            )
            measured = run_server(options)
            key = "url"
        elif deployment.device and target and target.folder and draft and draft.folder:
            smoke_options = SmokeOptions(
                target=str(target.folder),
                draft=draft.folder,
                device=deployment.device,
                num_speculative_tokens=int(tokens),
                max_prompts=max_prompts,
                min_acceptance_length=min_length,
                progress=False,
            )
            measured = run_reference(smoke_options)
            key = "device"
        else:
            why = "smoke needs a server url, or a device with a local target and drafter"
            return [deployment.locate(deploy_rules.NOT_EXAMINED.finding(why, location="smoke"), "command")]
    except (SpecprobeError, ImportError) as exc:
        note = deploy_rules.NOT_EXAMINED.finding(f"smoke could not run: {exc}", location="smoke")
        return [deployment.locate(note, "url", "device", "command")]
    findings = list(measured.findings)
    rate = measured.measurement.acceptance_rate if measured.measurement is not None else None
    min_rate = thresholds.get("min_acceptance_rate")
    if min_rate is not None and (not isinstance(rate, float | int) or rate < min_rate):
        findings.append(
            smoke_rules.ACCEPTANCE_LOW.finding(f"acceptance rate {rate} is below the required {min_rate}")
        )
    return [deployment.locate(f, key, "command") for f in findings]


def smoke_findings(deployments: Sequence[Deployment]) -> list[Finding]:
    """``smoke_deployment`` for every deployment that launches an engine."""
    return [finding for d in deployments if d.command is not None for finding in smoke_deployment(d)]
