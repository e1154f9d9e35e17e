"""vLLM production-stack Helm values (``servingEngineSpec.modelSpec[]``) read as the chart renders them.

Each model spec becomes one engine container running ``vllm serve MODEL_URL --host 0.0.0.0 --port
8000`` followed by what the chart derives from the spec: ``enableLoRA``, ``enableTool``,
``toolCallParser``, then from ``vllmConfig`` ``enableChunkedPrefill``, ``enablePrefixCaching`` (always
one of ``--enable-prefix-caching`` / ``--no-enable-prefix-caching`` when ``vllmConfig`` is set),
``maxModelLen``, ``dtype``, ``tensorParallelSize``, ``maxNumSeqs``, ``gpuMemoryUtilization``,
``maxLoras`` and ``extraArgs`` as written, then the LMCache ``--kv-transfer-config`` and the chat
template. Rendering follows ``helm/templates/deployment-vllm-multi.yaml`` of vllm-project/production-stack
at f1f9822790e76c4d5ac03303c32ce2073e44c573. Specs with a ``raySpec`` run through a Ray cluster
template instead and are not read (a DEPLOY-NO-LAUNCH note says so).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from specprobe.deploy.launch import ContainerRun, container_deployments
from specprobe.deploy.model import Deployment
from specprobe.deploy.rules import NO_LAUNCH
from specprobe.deploy.yamlsource import LineDict
from specprobe.findings import Finding

CHART = (
    "https://github.com/vllm-project/production-stack/blob/f1f9822790e76c4d5ac03303c32ce2073e44c573/"
    "helm/templates/deployment-vllm-multi.yaml"
)
# vllmConfig key -> the flag the chart writes (its own spellings, underscores included) and a value.
_VALUED = (
    ("maxModelLen", "--max-model-len"),
    ("dtype", "--dtype"),
    ("tensorParallelSize", "--tensor-parallel-size"),
    ("maxNumSeqs", "--max-num-seqs"),
    ("gpuMemoryUtilization", "--gpu_memory_utilization"),
    ("maxLoras", "--max_loras"),
)


def is_production_stack_values(documents: list[Any]) -> bool:
    first = documents[0] if len(documents) == 1 else None
    if not isinstance(first, LineDict):
        return False
    spec = first.get("servingEngineSpec")
    return isinstance(spec, dict) and isinstance(spec.get("modelSpec"), list)


def _text(value: Any) -> str:
    """A value as Helm's ``quote`` writes it (booleans lower-case, mappings as JSON)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


def _words(model: LineDict) -> tuple[list[str], list[int | None]]:
    words: list[str] = []
    lines: list[int | None] = []

    def add(line: int | None, *items: str) -> None:
        words.extend(items)
        lines.extend([line] * len(items))

    add(model.line_of("modelURL"), "vllm", "serve", _text(model.get("modelURL")), "--host", "0.0.0.0", "--port", "8000")
    if model.get("enableLoRA"):
        add(model.line_of("enableLoRA"), "--enable-lora")
    if model.get("enableTool"):
        add(model.line_of("enableTool"), "--enable-auto-tool-choice")
    if model.get("toolCallParser"):
        add(model.line_of("toolCallParser"), "--tool-call-parser", _text(model.get("toolCallParser")))
    config = model.get("vllmConfig")
    if isinstance(config, LineDict) and len(config):
        if "enableChunkedPrefill" in config:
            on = bool(config.get("enableChunkedPrefill"))
            flag = "--enable-chunked-prefill" if on else "--no-enable-chunked-prefill"
            add(config.line_of("enableChunkedPrefill"), flag)
        on = bool(config.get("enablePrefixCaching"))
        add(config.line_of("enablePrefixCaching") or config.line,
            "--enable-prefix-caching" if on else "--no-enable-prefix-caching")
        for key, flag in _VALUED:
            if key in config:
                add(config.line_of(key), flag, _text(config.get(key)))
        extra = config.get("extraArgs")
        if isinstance(extra, list):
            for index, item in enumerate(extra):
                line = extra.line_of(index) if hasattr(extra, "line_of") else config.line_of("extraArgs")
                add(line, _text(item))
    cache = model.get("lmcacheConfig")
    if isinstance(cache, LineDict) and cache.get("enabled"):
        role = _text(cache.get("kvRole") or "kv_both")
        add(cache.line_of("enabled"), "--kv-transfer-config",
            json.dumps({"kv_connector": "LMCacheConnectorV1", "kv_role": role}))
    if model.get("chatTemplate"):
        add(model.line_of("chatTemplate"), "--chat-template", f"/templates/{_text(model.get('chatTemplate'))}")
    return words, lines


def parse_production_stack_values(
    documents: list[Any], file: str, base_dir: Path
) -> tuple[list[Deployment], list[Finding]]:
    """One deployment per model spec the values serve."""
    values: LineDict = documents[0]
    deployments: list[Deployment] = []
    findings: list[Finding] = []
    for index, model in enumerate(values["servingEngineSpec"]["modelSpec"]):
        if not isinstance(model, LineDict):
            continue
        name = f"production-stack/{model.get('name') or index}"
        if "raySpec" in model:
            note = NO_LAUNCH.finding(
                f"{name}: a raySpec model runs through the chart's Ray cluster template, which is not read",
                location=name,
                evidence=(CHART,),
            )
            note.file, note.line = file, model.line
            findings.append(note)
            continue
        if not model.get("modelURL"):
            continue
        words, lines = _words(model)
        repository, tag = model.get("repository"), model.get("tag")
        image = f"{repository}:{tag}" if isinstance(repository, str) and tag is not None else None
        run = ContainerRun(model, words, lines, {}, own_entrypoint=True, arguments_given=True,
                           arguments_key="vllmConfig")
        found, notes = container_deployments(
            run, name=name, file=file, base_dir=base_dir, image=image, variables={}, device=None
        )
        deployments.extend(found)
        findings.extend(notes)
    return deployments, findings
