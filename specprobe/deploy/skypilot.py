"""SkyPilot task YAML: its ``run`` script read as bash reads it, with the task's ``envs`` set
(https://docs.skypilot.co/en/v0.9.3/reference/yaml-spec.html). SkyServe service files are the same
task with a ``service`` section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specprobe.deploy.model import Deployment
from specprobe.deploy.scriptblock import script_deployments
from specprobe.deploy.yamlsource import LineDict
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
    label = task.get("name") if isinstance(task.get("name"), str) else Path(file).stem
    return script_deployments(
        task,
        "run",
        where="run",
        what="a shell script",
        name=f"skypilot/{label}",
        file=file,
        base_dir=base_dir,
        variables=variables,
    )
