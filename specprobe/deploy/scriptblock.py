"""A shell script kept as a string in a YAML file (SkyPilot's ``run``, Truss' ``docker_server.start_command``)
read as bash reads it: its engine launches as deployments, each located on its line of the YAML file."""

from __future__ import annotations

from pathlib import Path

from specprobe.deploy import rules
from specprobe.deploy.launch import find_launches, to_deployments
from specprobe.deploy.model import Deployment
from specprobe.deploy.shell import ShellSyntaxError, parse_script
from specprobe.deploy.yamlsource import LineDict, block_first_line
from specprobe.findings import Finding


def script_deployments(
    owner: LineDict,
    key: str,
    *,
    where: str,
    what: str,
    name: str,
    file: str,
    base_dir: Path,
    variables: dict[str, str],
    image: str | None = None,
    image_line: int | None = None,
) -> tuple[list[Deployment], list[Finding]]:
    """The launches of the script at ``owner[key]`` (``where`` names it in findings, ``what`` says what it
    is: "a shell script"), named ``name``, ``name#2``, ...; a script bash could not parse is one finding."""
    first_line, follows = block_first_line(owner, key)
    try:
        script = parse_script(owner[key], first_line=first_line, lines_follow_text=follows, variables=variables)
    except ShellSyntaxError as exc:
        bad = rules.VALUE.finding(f"{where} cannot be read as {what}: {exc}", location=where)
        bad.file, bad.line = file, exc.line
        return [], [bad]
    deployments: list[Deployment] = []
    findings: list[Finding] = []
    for message, line in script.notes:
        note = rules.NOT_EXAMINED.finding(message, location=where)
        note.file, note.line = file, line
        findings.append(note)
    for command in script.commands:
        search = find_launches(command.words, list(command.lines), variables=command.variables)
        made, leftover = to_deployments(
            search,
            name=name + (f"#{len(deployments) + 1}" if deployments else ""),
            file=file,
            base_dir=base_dir,
            line=command.line,
            image=image,
            image_line=image_line,
        )
        deployments.extend(made)
        for finding in leftover:
            finding.file, finding.line = file, finding.line or command.line
            findings.append(finding)
    return deployments, findings
