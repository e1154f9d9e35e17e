"""Baseten Truss ``config.yaml`` with a custom server: ``docker_server.start_command`` read as the shell
command it is (Truss runs it in the container of ``base_image.image``; ``environment_variables`` are
set), e.g. ``sh -c "vllm serve MODEL --port 8000 ..."``
(https://docs.baseten.co/development/model/custom-server).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specprobe.deploy.model import Deployment
from specprobe.deploy.scriptblock import script_deployments
from specprobe.deploy.yamlsource import LineDict
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
    return script_deployments(
        server,
        "start_command",
        where="docker_server.start_command",
        what="a shell command",
        name=f"truss/{label}",
        file=file,
        base_dir=base_dir,
        variables=variables,
        image=image,
        image_line=base.line_of("image") if isinstance(base, LineDict) else None,
    )
