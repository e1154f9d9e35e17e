"""SkyPilot task YAML: its ``run`` script read as bash reads it, with the task's ``envs`` set
(https://docs.skypilot.co/en/v0.9.3/reference/yaml-spec.html). SkyServe service files are the same
task with a ``service`` section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specprobe.deploy import rules
from specprobe.deploy.launch import find_launches, to_deployments
from specprobe.deploy.model import Deployment
from specprobe.deploy.shell import ShellSyntaxError, parse_script
from specprobe.deploy.yamlsource import LineDict, block_first_line
from specprobe.findings import Finding

_TASK_KEYS = ("resources", "envs", "setup", "num_nodes", "service", "file_mounts", "workdir")


def is_skypilot_task(documents: list[Any]) -> bool:
    first = documents[0] if documents else None
    return (
        isinstance(first, LineDict)
        and isinstance(first.get("run"), str)
        and any(key in first for key in _TASK_KEYS)
    )


def parse_skypilot_task(documents: list[Any], file: str, base_dir: Path) -> tuple[list[Deployment], list[Finding]]:
    task: LineDict = documents[0]
    envs = task.get("envs")
    variables = {str(k): str(v) for k, v in envs.items() if v is not None} if isinstance(envs, dict) else {}
    first_line, follows = block_first_line(task, "run")
    label = task.get("name") if isinstance(task.get("name"), str) else Path(file).stem
    try:
        script = parse_script(task["run"], first_line=first_line, lines_follow_text=follows, variables=variables)
    except ShellSyntaxError as exc:
        bad = rules.VALUE.finding(f"run cannot be read as a shell script: {exc}", location="run")
        bad.file, bad.line = file, exc.line
        return [], [bad]
    deployments: list[Deployment] = []
    findings: list[Finding] = []
    for message, line in script.notes:
        note = rules.NOT_EXAMINED.finding(message, location="run")
        note.file, note.line = file, line
        findings.append(note)
    for command in script.commands:
        search = find_launches(command.words, list(command.lines), variables=command.variables)
        name = f"skypilot/{label}" + (f"#{len(deployments) + 1}" if deployments else "")
        made, leftover = to_deployments(search, name=name, file=file, base_dir=base_dir, line=command.line)
        deployments.extend(made)
        for finding in leftover:
            finding.file, finding.line = file, finding.line or command.line
            findings.append(finding)
    return deployments, findings
