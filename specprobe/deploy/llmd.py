"""llm-d ``llm-d-modelservice`` Helm values (the files llm-d's guides ship) read as the chart renders them.

A values file names the model once (``modelArtifacts.uri``/``name``) and, per role (``decode``,
``prefill``), containers whose ``modelCommand`` says how the chart builds the launch: ``vllmServe``
(``vllm serve MODEL --served-model-name NAME ... ARGS``), ``imageDefault`` (the image's entrypoint with
``--model MODEL ... ARGS``) or ``custom`` (``command`` and ``args`` as written). Rendering follows the
chart's ``templates/_helpers.tpl`` (llm-d-modelservice at 6ab49a0e7d4181eeb72b21c37cd12510e49f03de).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specprobe.deploy.kubernetes import container_words
from specprobe.deploy.launch import ContainerRun, container_deployments
from specprobe.deploy.model import Deployment
from specprobe.deploy.yamlsource import LineDict
from specprobe.findings import Finding

_ROLES = ("decode", "prefill")
_COMMANDS = ("vllmServe", "imageDefault", "custom")


def is_modelservice_values(documents: list[Any]) -> bool:
    first = documents[0] if len(documents) == 1 else None
    if not isinstance(first, LineDict) or not isinstance(first.get("modelArtifacts"), dict):
        return False
    return any(isinstance(first.get(role), dict) for role in _ROLES)


def _model(values: LineDict) -> str | None:
    """The model argument the chart derives from ``modelArtifacts.uri`` (hf://, pvc://, pvc+hf://)."""
    artifacts = values["modelArtifacts"]
    uri = artifacts.get("uri")
    if not isinstance(uri, str) or "://" not in uri:
        return None
    protocol, _, rest = uri.partition("://")
    if protocol == "hf":
        return rest
    if protocol == "pvc":
        path = rest.split("/", 1)[1] if "/" in rest else ""
        return f"{artifacts.get('mountPath') or '/model-cache'}/{path}"
    if protocol == "pvc+hf":
        parts = rest.split("/")
        return "/".join(parts[-2:]) if len(parts) >= 2 else None
    return None


def _parallel(section: LineDict) -> list[str]:
    parallelism = section.get("parallelism")
    words: list[str] = []
    if isinstance(parallelism, dict):
        for key, flag in (("tensor", "--tensor-parallel-size"), ("data", "--data-parallel-size")):
            value = parallelism.get(key)
            if isinstance(value, int) and value > 1:
                words += [flag, str(value)]
    return words


def parse_modelservice_values(
    documents: list[Any], file: str, base_dir: Path
) -> tuple[list[Deployment], list[Finding]]:
    """One deployment per engine container of each role the values create."""
    values: LineDict = documents[0]
    model = _model(values)
    served = values["modelArtifacts"].get("name")
    deployments: list[Deployment] = []
    findings: list[Finding] = []
    for role in _ROLES:
        section = values.get(role)
        if not isinstance(section, LineDict) or section.get("create") is False:
            continue
        containers = section.get("containers")
        for index, container in enumerate(containers if isinstance(containers, list) else []):
            if not isinstance(container, LineDict):
                continue
            problems: list[Finding] = []
            how = container.get("modelCommand") or "custom"
            at = container.line_of("modelCommand") if "modelCommand" in container else container.line
            args = container_words(container, "args", role, problems) or ([], [], {})
            command = container_words(container, "command", role, problems)
            made: list[str] = []
            if how in ("vllmServe", "imageDefault"):
                model_words = ([] if how == "vllmServe" else ["--model"]) + ([model] if model else [])
                made = [*model_words, *_parallel(section)]
                if isinstance(served, str):
                    made += ["--served-model-name", served]
                prefix = ["vllm", "serve"] if how == "vllmServe" else []
                words = [*prefix, *made, *args[0]]
                lines: list[int | None] = [at for _ in range(len(prefix) + len(made))]
                lines += args[1]
                origins = {k + len(prefix) + len(made): origin for k, origin in args[2].items()}
                own = how == "vllmServe"
            else:
                words = [*(command[0] if command else []), *args[0]]
                lines = [*(command[1] if command else []), *args[1]]
                offset = len(command[0]) if command else 0
                origins = {**(command[2] if command else {}), **{k + offset: o for k, o in args[2].items()}}
                own = command is not None
            run = ContainerRun(
                container, words, lines, origins, own_entrypoint=own, arguments_given=bool(args[0]) or not own,
                arguments_key="args", problems=problems,
            )
            image = container.get("image") if isinstance(container.get("image"), str) else None
            name = f"llm-d/{role}/{container.get('name') or index}"
            found, notes = container_deployments(
                run, name=name, file=file, base_dir=base_dir, image=image, variables={}, device=None
            )
            deployments.extend(found)
            findings.extend(notes)
    return deployments, findings
