"""Baseten Truss ``config.yaml`` with a custom server: ``docker_server.start_command`` read as the shell
command it is (Truss runs it in the container of ``base_image.image``; ``environment_variables`` are
set), e.g. ``sh -c "vllm serve MODEL --port 8000 ..."``
(https://docs.baseten.co/development/model/custom-server).
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


def is_truss_config(documents: list[Any]) -> bool:
    first = documents[0] if len(documents) == 1 else None
    if not isinstance(first, LineDict):
        return False
    server = first.get("docker_server")
    return isinstance(server, dict) and isinstance(server.get("start_command"), str)


def parse_truss_config(documents: list[Any], file: str, base_dir: Path) -> tuple[list[Deployment], list[Finding]]:
    config: LineDict = documents[0]
    server: LineDict = config["docker_server"]
    env = config.get("environment_variables")
    variables = {str(k): str(v) for k, v in env.items() if v is not None} if isinstance(env, dict) else {}
    base = config.get("base_image")
    image = base.get("image") if isinstance(base, dict) and isinstance(base.get("image"), str) else None
    label = config.get("model_name") if isinstance(config.get("model_name"), str) else Path(file).parent.name
    first_line, follows = block_first_line(server, "start_command")
    try:
        script = parse_script(
            server["start_command"], first_line=first_line, lines_follow_text=follows, variables=variables
        )
    except ShellSyntaxError as exc:
        bad = rules.VALUE.finding(f"docker_server.start_command cannot be read as a shell command: {exc}",
                                  location="docker_server.start_command")
        bad.file, bad.line = file, exc.line
        return [], [bad]
    deployments: list[Deployment] = []
    findings: list[Finding] = []
    for message, line in script.notes:
        note = rules.NOT_EXAMINED.finding(message, location="docker_server.start_command")
        note.file, note.line = file, line
        findings.append(note)
    for command in script.commands:
        search = find_launches(command.words, list(command.lines), variables=command.variables)
        name = f"truss/{label}" + (f"#{len(deployments) + 1}" if deployments else "")
        made, leftover = to_deployments(
            search, name=name, file=file, base_dir=base_dir, line=command.line, image=image,
            image_line=base.line_of("image") if isinstance(base, LineDict) else None,
        )
        deployments.extend(made)
        for finding in leftover:
            finding.file, finding.line = file, finding.line or command.line
            findings.append(finding)
    return deployments, findings
