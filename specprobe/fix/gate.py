"""The `specprobe fix` command that repairs a drafter, asked of the planner: for `gate --fix-plan`
(a FIX-COMMAND finding per deployment, located at its draft line) and for the next step a failing
`check` or `gate` names."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from specprobe.deploy.engines import resolve_engine_version
from specprobe.deploy.model import Deployment
from specprobe.engines.spec import EngineSpec
from specprobe.findings import Finding, SpecprobeError
from specprobe.fix.plan import build_plan
from specprobe.rules import fix as rules
from specprobe.untrusted.files import is_dir


def _folders(deployment: Deployment) -> tuple[str, str] | None:
    draft = deployment.resolve_path(deployment.draft)
    if draft is None or not is_dir(draft) or not deployment.target:
        return None
    target_path = deployment.resolve_path(deployment.target)
    target = str(target_path) if target_path is not None and target_path.exists() else deployment.target
    return str(draft), target


def repair_command(draft: str, target: str, engine: str, *, plan: bool = False) -> str | None:
    """The `specprobe fix ...` command (``--plan`` to show the changes, else ``--out`` a new folder)
    that makes ``draft`` pass for release ``engine`` (``E==V``), when the planner finds changes and
    nothing that blocks them; None otherwise (nothing to change, a blocker, arguments it cannot use)."""
    try:
        planned = build_plan(draft, target=target, engine=engine)
    except SpecprobeError:
        return None
    if not planned.changes or planned.blockers:
        return None
    command = ["specprobe", "fix", draft, "--target", target, "--engine", engine]
    if plan:
        return shlex.join([*command, "--plan"])
    out = f"{draft.rstrip('/')}-fixed-{engine.replace('==', '-')}"
    return shlex.join([*command, "--out", out])


def fix_command(deployment: Deployment, *, plan: bool = False) -> str | None:
    """The `specprobe fix ...` command that makes this deployment's drafter pass for its engine release;
    None when there is nothing local to fix (hub drafter, no exact version) or nothing to change."""
    found = _folders(deployment)
    if found is None or deployment.engine is None or deployment.engine.version is None:
        return None
    draft, target = found
    return repair_command(draft, target, f"{deployment.engine.engine}=={deployment.engine.version}", plan=plan)


def fix_plan_findings(deployments: Sequence[Deployment], engine: EngineSpec | None) -> list[Finding]:
    """One FIX-COMMAND finding per deployment (as gate read them) whose drafter fix can repair."""
    findings = []
    for deployment in deployments:
        if deployment.command is not None:
            resolve_engine_version(deployment, engine)
        command = fix_command(deployment)
        if command is None:
            continue
        finding = rules.COMMAND.finding(f"{deployment.name}: {command}", location=deployment.draft)
        findings.append(deployment.locate(finding, "draft", "speculative", "command"))
    return findings
