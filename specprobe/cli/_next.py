"""What a failing run tells a person to run next: the `specprobe fix ... --plan` command where the fix
planner can repair the drafter (asked, never guessed from rule IDs), and `specprobe rule ID` for why
a rule fails. Each is a callback ``emit`` calls only when the run fails; this module is imported only then, so
its imports (the planner, the deployment model) cost a passing run nothing."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from specprobe.deploy.engines import resolve_engine_version
from specprobe.deploy.model import Deployment
from specprobe.engines.spec import EngineSpec
from specprobe.findings import INTERNAL_ERROR_RULE, Report
from specprobe.fix.gate import fix_command, repair_command

NextSteps = Callable[[Report], list[str]]


def why_step(report: Report) -> list[str]:
    """``why: specprobe rule ID`` for the rules that fail the run (the first, and the others named)."""
    failing = sorted({f.rule for f in report.findings if report.fails(f.severity)} - {INTERNAL_ERROR_RULE})
    if not failing:
        return []
    others = f" (also failing: {', '.join(failing[1:])})" if len(failing) > 1 else ""
    return [f"why: specprobe rule {failing[0]}{others}"]


def _releases(label: str | None) -> list[str]:
    """The exact releases a report judged (its subject's ``engine``: ``vllm==0.34.0, sglang==0.5.23``)."""
    return [part.strip() for part in (label or "").split(",") if "==" in part]


def check_steps(draft: Path | str, target: str | None) -> NextSteps:
    """For `check`: the fix command for each release judged that the planner can repair the drafter for."""

    def steps(report: Report) -> list[str]:
        if target is None:
            return []  # fix needs the target's config to plan anything
        releases = _releases(report.subject.get("engine"))
        found = (repair_command(str(draft), target, release, plan=True) for release in releases)
        return [f"next: {command}" for command in dict.fromkeys(c for c in found if c)]

    return steps


def gate_steps(deployments: Sequence[Deployment], engine: EngineSpec | None) -> NextSteps:
    """For `gate`: the fix command of each failing deployment whose drafter the planner can repair."""

    def steps(report: Report) -> list[str]:
        failing = {f.deployment for f in report.findings if report.fails(f.severity) and f.deployment}
        found = []
        for deployment in deployments:
            if deployment.name not in failing:
                continue
            if deployment.command is not None:
                resolve_engine_version(deployment, engine)
            command = fix_command(deployment, plan=True)
            if command is not None:
                found.append(f"next: {command}")
        return list(dict.fromkeys(found))

    return steps
