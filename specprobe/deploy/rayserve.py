"""Ray Serve LLM configurations read as the vLLM engines they start.

``ray.serve.llm`` builds one vLLM engine per ``LLMConfig``: the model from ``model_loading_config``
(``model_source``, else ``model_id``) and every ``engine_kwargs`` key as vLLM's engine argument of that
name (``speculative_config`` included). LLMConfigs are found by shape anywhere in the file: a Serve
config's ``applications[].args.llm_configs``, a standalone LLMConfig file, or the ``serveConfigV2``
string of a KubeRay ``RayService``. Ray's LLMConfig is documented at
https://docs.ray.io/en/releases-2.44.0/serve/llm/serving-llms.html.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specprobe.deploy.model import Deployment, deployment_from_argv
from specprobe.deploy.vllm_config import annotate_speculative, config_arguments
from specprobe.deploy.yamlsource import LineDict, LineList, block_first_line, load_documents, relocate
from specprobe.findings import Finding, SpecprobeError

_MAX_WALK = 10_000


def _configs(node: Any, found: list[LineDict], visited: list[int]) -> None:
    """Every mapping with ``engine_kwargs`` under ``node``; ``serveConfigV2`` strings are read as YAML."""
    if visited[0] > _MAX_WALK:
        return
    visited[0] += 1
    if isinstance(node, LineDict):
        if isinstance(node.get("engine_kwargs"), LineDict):
            found.append(node)
            return
        for key, value in node.items():
            if key == "serveConfigV2" and isinstance(value, str):
                try:
                    inner = load_documents(value, "serveConfigV2")
                except SpecprobeError:
                    continue
                first_line, follows = block_first_line(node, key)
                for document in inner:
                    relocate(document, first_line, follows)
                    _configs(document, found, visited)
            else:
                _configs(value, found, visited)
    elif isinstance(node, LineList):
        for value in node:
            _configs(value, found, visited)


def llm_configs(documents: list[Any]) -> list[LineDict]:
    found: list[LineDict] = []
    visited = [0]
    for document in documents:
        _configs(document, found, visited)
    return found


def parse_llm_configs(configs: list[LineDict], file: str, base_dir: Path) -> tuple[list[Deployment], list[Finding]]:
    deployments: list[Deployment] = []
    for index, config in enumerate(configs):
        kwargs: LineDict = config["engine_kwargs"]
        loading = config.get("model_loading_config")
        model: str | None = None
        model_line = config.line
        if isinstance(loading, LineDict):
            for key in ("model_source", "model_id"):
                if isinstance(loading.get(key), str):
                    model, model_line = loading[key], loading.line_of(key)
                    break
        if model is None and isinstance(kwargs.get("model"), str):
            model = kwargs["model"]
        words, lines = config_arguments(kwargs)
        argv = ["vllm", "serve", *([model] if model else []), *words]
        argv_lines: list[int | None] = [config.line, config.line, *([model_line] if model else []), *lines]
        label = loading.get("model_id") if isinstance(loading, LineDict) else None
        deployment = deployment_from_argv(
            argv,
            file,
            config.line,
            argv_lines=argv_lines,
            name=f"ray-serve/{label if isinstance(label, str) else index}",
            base_dir=base_dir,
        )
        annotate_speculative(deployment, kwargs)
        deployment.findings = [deployment.locate(f) for f in deployment.findings]
        deployments.append(deployment)
    return deployments, []
