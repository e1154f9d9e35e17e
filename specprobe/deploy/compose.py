"""docker-compose files parsed into deployments: every service's ``entrypoint`` + ``command`` (a string,
split like Compose splits it, or a list), ``environment`` (list or map), ``${VAR:-default}``
interpolation from ``environment`` and the ``.env`` file beside the compose file, and ``command``
alone run through the image's entrypoint.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from specprobe.deploy import rules
from specprobe.deploy.dockerfile import final_image
from specprobe.deploy.launch import (
    ContainerRun,
    container_deployments,
)
from specprobe.deploy.model import Deployment
from specprobe.deploy.yamlsource import LineDict, LineList, block_first_line
from specprobe.findings import Finding
from specprobe.untrusted.files import UntrustedInputError, read_bounded

# Compose interpolation: $$ escapes, ${VAR}, ${VAR:-default}, ${VAR-default}, $VAR
# (https://docs.docker.com/reference/compose-file/interpolation/).
_INTERPOLATION = re.compile(
    r"\$\$|\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<default>[^}]*))?\}|\$(?P<bare>[A-Za-z_][A-Za-z0-9_]*)"
)
_DOTENV_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$")


def is_compose(documents: list[Any]) -> bool:
    first = documents[0] if documents else None
    return isinstance(first, dict) and isinstance(first.get("services"), dict)


def interpolate(text: str, variables: dict[str, str]) -> str:
    """Compose's interpolation of one value; unknown variables without a default stay as written."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group("braced") or match.group("bare")
        if name in variables and (variables[name] or not (match.group("op") or "").startswith(":")):
            return variables[name]
        op = match.group("op") or ""
        if op.endswith("-"):
            return match.group("default") or ""
        return match.group(0)

    return _INTERPOLATION.sub(substitute, text)


def read_dotenv(folder: Path) -> dict[str, str]:
    """``KEY=VALUE`` lines of ``folder/.env`` (what Compose reads for interpolation); absent -> {}."""
    path = folder / ".env"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    variables: dict[str, str] = {}
    for raw in text.splitlines()[:10_000]:
        match = _DOTENV_LINE.match(raw)
        if match:
            value = match.group(2)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            variables[match.group(1)] = value
    return variables


def _environment(service: LineDict, variables: dict[str, str]) -> dict[str, str]:
    env: dict[str, str] = {}
    raw = service.get("environment")
    if isinstance(raw, dict):
        for key, value in raw.items():
            if value is not None:
                env[str(key)] = interpolate(str(value), variables)
    elif isinstance(raw, list):
        for item in raw:
            if isinstance(item, str) and "=" in item:
                key, _, value = item.partition("=")
                env[key] = interpolate(value, variables)
    return env


def _words(
    service: LineDict, key: str, name: str, variables: dict[str, str], problems: list[Finding]
) -> tuple[list[str], list[int | None], dict[int, tuple[int, bool]]] | None:
    """``command`` or ``entrypoint`` as words with lines: a string is split like a shell would (no shell
    runs it), a list is taken item by item."""
    if key not in service or service[key] is None:
        return None
    value = service[key]
    line = service.line_of(key)
    if isinstance(value, str):
        try:
            split = shlex.split(interpolate(value, variables))
        except ValueError as exc:
            bad = rules.VALUE.finding(f"{key} cannot be split into words: {exc}", location=key)
            bad.line = line
            problems.append(bad)
            return None
        split_lines: list[int | None] = [line] * len(split)
        return split, split_lines, {}
    if isinstance(value, LineList):
        words: list[str] = []
        lines: list[int | None] = []
        origins: dict[int, tuple[int, bool]] = {}
        for index, item in enumerate(value):
            if isinstance(item, dict | list):
                bad = rules.VALUE.finding(f"{key}[{index}] is not a string", location=f"{key}[{index}]")
                bad.line = value.line_of(index)
                problems.append(bad)
                continue
            words.append(interpolate("" if item is None else str(item), variables))
            lines.append(value.line_of(index))
            origins[len(words) - 1] = block_first_line(value, index)
        return words, lines, origins
    bad = rules.VALUE.finding(f"{key} must be a string or a list, got {type(value).__name__}", location=key)
    bad.line = line
    problems.append(bad)
    return None


def _device(service: LineDict) -> str | None:
    if "runtime" in service and service.get("runtime") == "nvidia":
        return "cuda"
    deploy = service.get("deploy")
    text = repr(deploy.get("resources")) if isinstance(deploy, dict) else ""
    return "cuda" if "gpu" in text or "nvidia" in text else None


# A Dockerfile is a few KB; one larger is not read for its FROM line.
_MAX_DOCKERFILE_BYTES = 1024 * 1024


def _built_image(service: LineDict, base_dir: Path, dotenv: dict[str, str]) -> str | None:
    """The image a service without ``image:`` is built from: its ``build`` Dockerfile's final ``FROM``,
    with ``build.args`` (interpolated from .env) replacing the Dockerfile's ARG defaults."""
    build = service.get("build")
    if isinstance(build, str):
        context, dockerfile, raw_args = build, "Dockerfile", None
    elif isinstance(build, dict):
        context = build.get("context", ".")
        dockerfile = build.get("dockerfile", "Dockerfile")
        raw_args = build.get("args")
    else:
        return None
    if not isinstance(context, str) or not isinstance(dockerfile, str):
        return None
    args: dict[str, str] = {}
    if isinstance(raw_args, dict):
        args = {str(k): interpolate(str(v), dotenv) for k, v in raw_args.items() if v is not None}
    elif isinstance(raw_args, list):
        pairs = (str(item).partition("=") for item in raw_args)
        args = {name: interpolate(value, dotenv) for name, has, value in pairs if has}
    path = base_dir / interpolate(context, dotenv) / interpolate(dockerfile, dotenv)
    try:
        text = read_bounded(path, max_bytes=_MAX_DOCKERFILE_BYTES, what=str(path)).decode("utf-8", "replace")
    except (UntrustedInputError, OSError):
        return None  # a build whose Dockerfile is not here: the image stays unknown, as without build
    return final_image(text, args)


def parse_compose(documents: list[Any], file: str, base_dir: Path) -> tuple[list[Deployment], list[Finding]]:
    """Deployments of every service that runs an engine, and findings about the others."""
    root = documents[0]
    dotenv = read_dotenv(base_dir)
    deployments: list[Deployment] = []
    findings: list[Finding] = []
    for service_name, service in root["services"].items():
        if not isinstance(service, LineDict):
            continue
        name = f"compose/service/{service_name}"
        problems: list[Finding] = []
        env = _environment(service, dotenv)
        scope = {**dotenv, **env}
        image_raw = service.get("image")
        image: str | None
        if isinstance(image_raw, str):
            image = interpolate(image_raw, dotenv)
        else:
            image = _built_image(service, base_dir, dotenv)
        # Compose interpolates from the shell and .env only; the service's environment is what a shell
        # inside the container sees (`sh -c "... $$VAR"`).
        entrypoint = _words(service, "entrypoint", name, dotenv, problems)
        command = _words(service, "command", name, dotenv, problems)
        words: list[str] = []
        lines: list[int | None] = []
        origins: dict[int, tuple[int, bool]] = {}
        for part in (entrypoint, command):
            if part is not None:
                origins.update({len(words) + i: origin for i, origin in part[2].items()})
                words.extend(part[0])
                lines.extend(part[1])
        run = ContainerRun(
            service,
            words,
            lines,
            origins,
            own_entrypoint=entrypoint is not None,
            arguments_given=command is not None,
            arguments_key="command",
            problems=problems,
        )
        made, leftover = container_deployments(
            run, name=name, file=file, base_dir=base_dir, image=image, variables=scope, device=_device(service)
        )
        deployments.extend(made)
        findings.extend(leftover)
    return deployments, findings
