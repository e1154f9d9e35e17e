"""srt-slurm recipes (``srtctl`` job files, as SemiAnalysis InferenceX ships them) read as the engine
launches they describe: ``backend.type`` names the engine, ``backend.<engine>_config.<role>`` (prefill,
decode, aggregated...) holds each role's server flags by name, ``model.path`` the model and
``model.container`` the image; with ``frontend.type: dynamo`` the workers are NVIDIA Dynamo's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from specprobe.deploy.launch import Search, find_launches, to_deployments
from specprobe.deploy.model import Deployment
from specprobe.deploy.vllm_config import annotate_speculative, config_arguments
from specprobe.deploy.yamlsource import LineDict
from specprobe.findings import Finding

_ENGINES = ("sglang", "vllm")


def _backend(documents: list[Any]) -> tuple[LineDict, str, LineDict] | None:
    """(the recipe section holding ``backend``, the engine, its roles' flags): at the top, or under
    ``base`` in a recipe with overrides; the engine from ``backend.type`` or its ``<engine>_config``."""
    first = documents[0] if len(documents) == 1 else None
    if not isinstance(first, LineDict):
        return None
    for section in (first, first.get("base")):
        backend = section.get("backend") if isinstance(section, LineDict) else None
        if not isinstance(backend, LineDict):
            continue
        named = str(backend.get("type") or "").lower()
        for engine in (named,) if named in _ENGINES else _ENGINES:
            roles = backend.get(f"{engine}_config")
            if isinstance(roles, LineDict) and isinstance(section, LineDict):
                return section, engine, roles
    return None


def is_srt_slurm_recipe(documents: list[Any]) -> bool:
    return _backend(documents) is not None


def parse_srt_slurm_recipe(documents: list[Any], file: str, base_dir: Path) -> tuple[list[Deployment], list[Finding]]:
    found = _backend(documents)
    assert found is not None
    recipe, engine, roles = found
    raw_model = recipe.get("model")
    model: LineDict = raw_model if isinstance(raw_model, LineDict) else LineDict()
    frontend = recipe.get("frontend")
    dynamo = isinstance(frontend, dict) and str(frontend.get("type", "")).lower() == "dynamo"
    image = model.get("container") if isinstance(model.get("container"), str) else None
    deployments: list[Deployment] = []
    findings: list[Finding] = []
    for role, flags in roles.items():
        if not isinstance(flags, LineDict):
            continue
        launcher = (
            ["python3", "-m", f"dynamo.{engine}"]
            if dynamo
            else (["python3", "-m", "sglang.launch_server"] if engine == "sglang" else ["vllm", "serve"])
        )
        words, lines = config_arguments(flags)
        model_path = model.get("path")
        model_words: list[str] = []
        named = {str(key).replace("_", "-") for key in flags}
        if isinstance(model_path, str) and not named & {"model-path", "model"}:
            flag = "--model-path" if engine == "sglang" else "--model"
            model_words = [model_path] if launcher == ["vllm", "serve"] else [flag, model_path]
        at = roles.line_of(role)
        argv = [*launcher, *model_words, *words]
        argv_lines: list[int | None] = [at for _ in launcher]
        argv_lines += [model.line_of("path") for _ in model_words]
        argv_lines += lines
        search = find_launches(argv, argv_lines, image=image)
        made, leftover = to_deployments(
            Search(search.launches, search.findings),
            name=f"srt-slurm/{role}",
            file=file,
            base_dir=base_dir,
            line=at,
            image=image,
            image_line=model.line_of("container") if image else None,
        )
        for deployment in made:
            annotate_speculative(deployment, flags)
        deployments.extend(made)
        findings.extend(leftover)
    return deployments, findings
