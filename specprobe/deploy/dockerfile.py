"""A Dockerfile (or Containerfile) whose final stage launches an engine: ``FROM`` gives the image (its
tag the engine version, its entrypoint what runs), ``ENTRYPOINT``/``CMD`` in exec (JSON) or shell
form give the command, ``ENV`` the variables a shell form sees.

``ARG`` defaults are expanded where Docker expands them before the image is read: an ``ARG`` before the
first ``FROM`` in every ``FROM`` line (``ARG VLLM_VERSION=v0.16.0`` / ``FROM vllm/vllm-openai:${VLLM_VERSION}``
is vLLM 0.16.0), a stage's own ``ARG`` in its ``ENV`` values; build arguments given with the build
(``--build-arg``, compose's ``build.args``) replace the defaults.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from specprobe.deploy import rules
from specprobe.deploy.engines import image_entrypoint
from specprobe.deploy.launch import Search, find_launches, through_entrypoint, to_deployments
from specprobe.deploy.model import Deployment
from specprobe.deploy.shell.model import expand as interpolate
from specprobe.findings import Finding

_INSTRUCTION = re.compile(r"^\s*([A-Za-z]+)\s+(.*)$", re.DOTALL)
_NAMES = ("dockerfile", "containerfile")


def is_dockerfile(path: Path) -> bool:
    name = path.name.lower()
    return name in _NAMES or name.startswith(("dockerfile.", "containerfile.")) or name.endswith(".dockerfile")


def _instructions(text: str) -> list[tuple[str, str, int]]:
    """(INSTRUCTION, arguments, first line) with continuation lines joined and comments dropped."""
    found: list[tuple[str, str, int]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction is dropped, as Docker does
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1])
            continue
        pending.append(stripped)
        match = _INSTRUCTION.match(" ".join(pending))
        pending = []
        if match:
            found.append((match.group(1).upper(), match.group(2).strip(), start))
    return found


def _command(arguments: str) -> list[str] | None:
    """An ENTRYPOINT/CMD value: the exec form's list, or the shell form run by /bin/sh -c."""
    if arguments.startswith("["):
        try:
            value = json.loads(arguments)
        except json.JSONDecodeError:
            return None
        return [str(v) for v in value] if isinstance(value, list) else None
    return ["/bin/sh", "-c", arguments]


def _env(arguments: str, env: dict[str, str], args: dict[str, str] | None = None) -> None:
    """``ENV`` values, with the stage's ``ARG``s and earlier ``ENV``s expanded as Docker does."""
    try:
        words = shlex.split(arguments)
    except ValueError:
        return
    scope = {**(args or {}), **env}
    if words and all("=" in w for w in words):
        env.update((name, interpolate(value, scope)) for name, value in (w.split("=", 1) for w in words))
    elif len(words) >= 2:
        env[words[0]] = interpolate(" ".join(words[1:]), scope)


def _arg(arguments: str, args: dict[str, str], given: dict[str, str]) -> None:
    """``ARG NAME[=default]``: the build argument given, else the default (expanded by the ARGs
    before it); a name with neither stays unset, so a FROM naming it keeps ``${NAME}`` unresolved."""
    try:
        words = shlex.split(arguments)
    except ValueError:
        return
    for word in words:
        name, has_default, default = word.partition("=")
        if name in given:
            args[name] = given[name]
        elif has_default:
            args[name] = interpolate(default, args)


def final_image(text: str, build_args: dict[str, str] | None = None) -> str | None:
    """The image the final stage is built ``FROM``, ARGs expanded (what a compose ``build:`` runs)."""
    image: str | None = None
    given = dict(build_args or {})
    global_args: dict[str, str] = {}
    seen_from = False
    for instruction, arguments, _line in _instructions(text):
        if instruction == "ARG" and not seen_from:
            _arg(arguments, global_args, given)
        elif instruction == "FROM":
            seen_from = True
            image = _from_image(arguments, global_args)
    return image


def _from_image(arguments: str, global_args: dict[str, str]) -> str | None:
    words = [w for w in arguments.split() if not w.startswith("--")]
    return interpolate(words[0], global_args) if words else None


def parse_dockerfile(
    text: str, file: str, base_dir: Path, build_args: dict[str, str] | None = None
) -> tuple[list[Deployment], list[Finding]]:
    """The final stage's launch as a deployment; a malformed ENTRYPOINT/CMD is a finding at its line.
    ``build_args`` are the build's ``--build-arg`` values, which replace ARG defaults."""
    image: str | None = None
    image_line: int | None = None
    entrypoint: list[str] | None = None
    cmd: list[str] | None = None
    lines: dict[str, int] = {}
    env: dict[str, str] = {}
    problems: list[Finding] = []
    given = dict(build_args or {})
    # ARGs before the first FROM are usable in every FROM line; a stage's own ARGs only inside it.
    global_args: dict[str, str] = {}
    stage_args: dict[str, str] = {}
    seen_from = False
    for instruction, arguments, line in _instructions(text):
        if instruction == "ARG":
            _arg(arguments, stage_args if seen_from else global_args, given)
        elif instruction == "FROM":
            seen_from = True
            image, image_line, entrypoint, cmd, env = _from_image(arguments, global_args), line, None, None, {}
            stage_args = {}
        elif instruction == "ENV":
            _env(arguments, env, stage_args)
        elif instruction in ("ENTRYPOINT", "CMD"):
            value = _command(arguments)
            if value is None:
                bad = rules.VALUE.finding(
                    f"{instruction} is neither a JSON list nor a shell command", location=instruction
                )
                bad.file, bad.line = file, line
                problems.append(bad)
                continue
            lines[instruction] = line
            if instruction == "ENTRYPOINT":
                entrypoint, cmd = value, None  # a stage's ENTRYPOINT drops the CMD it inherited
            else:
                cmd = value
    search = Search(findings=problems)
    if entrypoint is not None:
        words = entrypoint + (cmd or [])
        entrypoint_lines: list[int | None] = [lines["ENTRYPOINT"]] * len(entrypoint)
        word_lines = entrypoint_lines + [lines.get("CMD")] * len(cmd or [])
    elif cmd is not None:
        words, word_lines = list(cmd), [lines["CMD"]] * len(cmd)
        if image_entrypoint(image) is not None:
            words, word_lines, doubled = through_entrypoint(image, words, word_lines, image_line)
            search.findings.extend(doubled)
    else:
        words, word_lines = [], []
    if words:
        found = find_launches(words, word_lines, image=image, variables=env)
        search.launches.extend(found.launches)
        search.findings.extend(found.findings)
    deployments, leftover = to_deployments(
        search,
        name=f"dockerfile/{Path(file).name}",
        file=file,
        base_dir=base_dir,
        line=lines.get("ENTRYPOINT") or lines.get("CMD") or image_line,
        image=image,
        image_line=image_line,
    )
    for finding in leftover:
        finding.file = file
    return deployments, leftover
