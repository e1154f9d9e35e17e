"""Kubernetes manifests (Deployment, StatefulSet, Pod, Job, CronJob, DaemonSet, List) and any custom
resource that holds a container (LeaderWorkerSet, KServe ServingRuntime/InferenceService, OME
ClusterServingRuntime ``engineConfig.runner``, NVIDIA Dynamo ``DynamoGraphDeployment``
``extraPodSpec.mainContainer``, llm-d), found by shape rather than by kind, parsed into deployments.

Every container is read (init containers and sidecars count only when they run an engine): its
``command`` + ``args`` with ``$(VAR)`` expanded from its ``env`` the way the kubelet does, ``args``
alone run through the image's entrypoint, and the ``["/bin/sh", "-c", "<script>"]`` form.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from specprobe.deploy import rules
from specprobe.deploy.launch import (
    ContainerRun,
    container_deployments,
)
from specprobe.deploy.launchers import launchers
from specprobe.deploy.model import Deployment
from specprobe.deploy.yamlsource import LineDict, LineList, block_first_line, load_documents, relocate
from specprobe.findings import Finding, SpecprobeError

# $(VAR) references; $$ escapes a dollar (https://kubernetes.io/docs/tasks/inject-data-application/
# define-interdependent-environment-variables/).
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")
_CONTAINER_LISTS = ("initContainers", "containers")
_MAX_WALK = 10_000
_MAX_DEPTH = 12


def expand_references(text: str, env: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: defined names are replaced, ``$$`` becomes ``$``, the rest stays."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env.get(name, match.group(0))

    return _REFERENCE.sub(substitute, text)


def is_kubernetes(documents: list[Any]) -> bool:
    return any(isinstance(d, dict) and "apiVersion" in d and "kind" in d for d in documents)


def _is_container(node: LineDict) -> bool:
    """A container by shape: an image and what it runs (a pod's container, OME's ``engineConfig.runner``,
    Dynamo's ``extraPodSpec.mainContainer``, KServe's ``containers``, a Tekton step's or an Argo
    template's ``script``)."""
    return isinstance(node.get("image"), str) and any(key in node for key in ("command", "args", "script"))


_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})
Script = tuple[str, int, bool]  # text, first line in the file, whether its lines follow the file


def _config_scripts(objects: list[LineDict]) -> dict[str, Script]:
    """Scripts held in ConfigMaps of the file (``start.sh: |``), by key: a container that runs
    ``bash /scripts/start.sh`` from a mounted ConfigMap runs this text."""
    scripts: dict[str, Script] = {}
    for obj in objects:
        data = obj.get("data")
        if obj.get("kind") != "ConfigMap" or not isinstance(data, LineDict):
            continue
        for key, value in data.items():
            if (
                isinstance(key, str)
                and isinstance(value, str)
                and (key.endswith((".sh", ".bash")) or value.startswith("#!"))
            ):
                scripts[key] = (value, *block_first_line(data, key))
    return scripts


def _script_words(
    script: Script, shell: str, line: int | None
) -> tuple[list[str], list[int | None], dict[int, tuple[int, bool]]]:
    text, first_line, follows = script
    return [shell, "-c", text], [line, line, first_line], {2: (first_line, follows)}


def _mounted_script(
    words: list[str], lines: list[int | None], origins: dict[int, tuple[int, bool]], scripts: dict[str, Script]
) -> tuple[list[str], list[int | None], dict[int, tuple[int, bool]]]:
    """``bash /path/start.sh ARGS`` or ``/path/start.sh`` where ``start.sh`` is a ConfigMap script of the
    same file: the script's text, read as ``bash -c``, with its own lines."""
    if not words or not scripts:
        return words, lines, origins
    head = PurePosixPath(words[0]).name
    at = 0
    if head in _SHELLS:
        at = 1
        while at < len(words) and words[at].startswith("-") and "c" not in words[at][1:]:
            at += 1
        if at >= len(words) or words[at].startswith("-"):
            return words, lines, origins
    script = scripts.get(PurePosixPath(words[at]).name)
    if script is None:
        return words, lines, origins
    return _script_words(script, words[0] if at else "/bin/sh", lines[at])


def _is_model_spec(node: LineDict) -> bool:
    """An image-less mapping that gives an engine its arguments through an operator (KServe
    InferenceService ``spec.predictor.model``: ``modelFormat`` + ``args``)."""
    args = node.get("args")
    return "image" not in node and isinstance(args, LineList) and all(isinstance(a, str) for a in args)


def containers(node: Any) -> list[tuple[LineDict, list[str]]]:
    """Every container-like mapping under ``node`` with its key path, found by shape, not by kind: the
    items of ``containers``/``initContainers`` lists, any mapping with ``image`` and ``command``/``args``,
    and image-less ``args`` mappings (found through an operator); containers are not descended into."""
    found: list[tuple[LineDict, list[str]]] = []
    stack: list[tuple[Any, list[str]]] = [(node, [])]
    seen: set[int] = set()
    visited = 0
    while stack and visited < _MAX_WALK:
        current, path = stack.pop()
        if id(current) in seen or len(path) > _MAX_DEPTH:
            continue
        seen.add(id(current))
        visited += 1
        if isinstance(current, LineDict):
            in_list = len(path) >= 2 and path[-2] in _CONTAINER_LISTS
            if path and (in_list or _is_container(current) or (_is_model_spec(current) and path[-1] != "spec")):
                found.append((current, path))
                continue
            stack.extend((value, [*path, str(key)]) for key, value in reversed(list(current.items())))
        elif isinstance(current, LineList):
            stack.extend((value, [*path, str(index)]) for index, value in reversed(list(enumerate(current))))
    return found


def container_words(
    container: LineDict, key: str, name: str, problems: list[Finding]
) -> tuple[list[str], list[int | None], dict[int, tuple[int, bool]]] | None:
    """A container's command or args as strings with their lines; a wrong type is a finding."""
    if key not in container or container[key] is None:
        return None
    value = container[key]
    if not isinstance(value, LineList):
        bad = rules.VALUE.finding(f"{key} must be a list of strings, got {type(value).__name__}", location=key)
        bad.line = container.line_of(key)
        problems.append(bad)
        return None
    words: list[str] = []
    lines: list[int | None] = []
    origins: dict[int, tuple[int, bool]] = {}
    for index, item in enumerate(value):
        if isinstance(item, dict | list):
            bad = rules.VALUE.finding(f"{key}[{index}] is not a string", location=f"{key}[{index}]")
            bad.line = value.line_of(index)
            problems.append(bad)
            continue
        words.append("" if item is None else str(item))
        lines.append(value.line_of(index))
        origins[len(words) - 1] = block_first_line(value, index)
    return words, lines, origins


def _environment(container: LineDict, config_data: dict[str, dict[str, str]]) -> dict[str, str]:
    """The container's env with values known from the file (``value``, and ConfigMaps of the same file
    through ``envFrom`` or ``configMapKeyRef``), each expanded against the ones before it."""
    env: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        ref = source.get("configMapRef") if isinstance(source, dict) else None
        if isinstance(ref, dict) and ref.get("name") in config_data:
            prefix = str(source.get("prefix") or "")
            env.update({prefix + key: value for key, value in config_data[ref["name"]].items()})
    for item in container.get("env") or []:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            continue
        if "value" in item:
            value = item.get("value")
            env[item["name"]] = expand_references("" if value is None else str(value), env)
            continue
        value_from = item.get("valueFrom")
        ref = value_from.get("configMapKeyRef") if isinstance(value_from, dict) else None
        if isinstance(ref, dict) and ref.get("name") in config_data and ref.get("key") in config_data[ref["name"]]:
            env[item["name"]] = config_data[ref["name"]][ref["key"]]
    return env


def _device(container: LineDict) -> str | None:
    resources = container.get("resources")
    if isinstance(resources, dict):
        for section in ("limits", "requests"):
            amounts = resources.get(section)
            if isinstance(amounts, dict) and any("gpu" in str(key) for key in amounts):
                return "cuda"
    return None


def _format_entrypoint(container: LineDict) -> tuple[str, ...] | None:
    """The entrypoint of the runtime serving ``modelFormat.name`` (data/launchers.yaml), if known."""
    model_format = container.get("modelFormat")
    name = model_format.get("name") if isinstance(model_format, dict) else None
    return launchers().model_formats.get(str(name).lower()) if isinstance(name, str) else None


def _container(
    container: LineDict,
    name: str,
    file: str,
    base_dir: Path,
    configs: dict[str, LineDict],
    *,
    config_data: dict[str, dict[str, str]],
    scripts: dict[str, Script],
) -> tuple[list[Deployment], list[Finding]]:
    problems: list[Finding] = []
    image = container.get("image") if isinstance(container.get("image"), str) else None
    env = _environment(container, config_data)
    command = container_words(container, "command", name, problems)
    args = container_words(container, "args", name, problems)
    words: list[str] = []
    lines: list[int | None] = []
    origins: dict[int, tuple[int, bool]] = {}
    runtime = _format_entrypoint(container) if image is None and command is None else None
    script = container.get("script")
    if isinstance(script, str) and command is None:
        # Tekton step / Argo `script`: the text runs as a script (its shebang's shell; sh here).
        command = _script_words(
            (script, *block_first_line(container, "script")), "/bin/sh", container.line_of("script")
        )
    source = script.get("source") if isinstance(script, dict) else container.get("source")
    if isinstance(source, str) and command is not None and command[0] and PurePosixPath(command[0][0]).name in _SHELLS:
        # Argo script template: `command: [bash]` runs the file written from `source`.
        first, follows = block_first_line(container, "source")
        command = ([*command[0], "-c", source], [*command[1], first, first], {len(command[0]) + 1: (first, follows)})
    if runtime is not None:
        # KServe's predictor.model: the runtime chosen for the model format runs these arguments.
        line = container.line_of("modelFormat")
        command = (list(runtime), [line] * len(runtime), {})
    for part in (command, args):
        if part is not None:
            for index, origin in part[2].items():
                origins[len(words) + index] = origin
            words.extend(expand_references(w, env) for w in part[0])
            lines.extend(part[1])
    words, lines, origins = _mounted_script(words, lines, origins, scripts)
    run = ContainerRun(
        container,
        words,
        lines,
        origins,
        own_entrypoint=command is not None,
        arguments_given=args is not None,
        arguments_key="args",
        problems=problems,
    )
    return container_deployments(
        run,
        name=name,
        file=file,
        base_dir=base_dir,
        image=image,
        variables=env,
        device=_device(container),
        configs=configs,
    )


def _documents(documents: list[Any]) -> list[LineDict]:
    """Top-level objects, with ``kind: List`` (kubectl get -o yaml) unpacked."""
    objects: list[LineDict] = []
    for document in documents:
        if not isinstance(document, LineDict):
            continue
        items = document.get("items")
        if str(document.get("kind", "")).endswith("List") and isinstance(items, list):
            objects.extend(item for item in items if isinstance(item, LineDict))
        else:
            objects.append(document)
    return objects


def _config_maps(objects: list[LineDict], file: str) -> dict[str, LineDict]:
    """YAML mappings held in ConfigMap data (a vLLM ``--config`` file mounted from it), by key, with
    file lines."""
    configs: dict[str, LineDict] = {}
    for obj in objects:
        data = obj.get("data")
        if obj.get("kind") != "ConfigMap" or not isinstance(data, LineDict):
            continue
        for key, value in data.items():
            if not isinstance(key, str) or not key.endswith((".yaml", ".yml")) or not isinstance(value, str):
                continue
            try:
                parsed = load_documents(value, f"{file}: ConfigMap key {key}")
            except SpecprobeError:
                continue  # not YAML: the launch is linted as written
            if parsed and isinstance(parsed[0], LineDict):
                first_line, follows = block_first_line(data, key)
                relocate(parsed[0], first_line, follows)
                configs[key] = parsed[0]
    return configs


def parse_kubernetes(documents: list[Any], file: str, base_dir: Path) -> tuple[list[Deployment], list[Finding]]:
    """Deployments of every container that runs an engine, and findings about the others."""
    deployments: list[Deployment] = []
    findings: list[Finding] = []
    objects = _documents(documents)
    configs = _config_maps(objects, file)
    scripts = _config_scripts(objects)
    config_data = {
        str(obj["metadata"].get("name")): {str(k): str(v) for k, v in obj["data"].items() if v is not None}
        for obj in objects
        if obj.get("kind") == "ConfigMap"
        and isinstance(obj.get("data"), dict)
        and isinstance(obj.get("metadata"), dict)
    }
    for obj in objects:
        kind = str(obj.get("kind") or "Object")
        metadata = obj.get("metadata")
        object_name = str(metadata.get("name") or "unnamed") if isinstance(metadata, dict) else "unnamed"
        for container, path in containers(obj):
            if len(path) >= 2 and path[-2] in _CONTAINER_LISTS:
                section = "initContainer" if path[-2] == "initContainers" else "container"
                name = f"k8s/{kind}/{object_name}/{section}/{container.get('name') or f'{path[-2]}[{path[-1]}]'}"
            else:
                name = f"k8s/{kind}/{object_name}/{'.'.join(path)}"
            found, notes = _container(
                container, name, file, base_dir, configs, config_data=config_data, scripts=scripts
            )
            if not found and "image" not in container:
                continue  # an image-less args mapping that runs no engine is not a container at all
            deployments.extend(found)
            findings.extend(notes)
    return deployments, findings
