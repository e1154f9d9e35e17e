"""Deployment-file rules (DEPLOY-*): what a Kubernetes manifest, compose file, script, vLLM config or
specprobe manifest says about a launch before any engine rule can run on it.

The catalogue sits beside the parsers that emit these findings, so that ``specprobe.deploy`` never
imports upward; ``specprobe.rules.catalog.FAMILY_MODULES`` lists it with the other families."""

from __future__ import annotations

from specprobe.findings import Severity
from specprobe.ruledef import rule

_K8S_CONTAINER = "https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#Container"
_K8S_ENV_EXPANSION = "https://kubernetes.io/docs/tasks/inject-data-application/define-interdependent-environment-variables/"
_HF_CACHE = "https://huggingface.co/docs/huggingface_hub/v0.26.0/en/guides/manage-cache"
_COMPOSE_SERVICES = "https://docs.docker.com/reference/compose-file/services/"
# vLLM's image runs `vllm serve` as its ENTRYPOINT (docker/Dockerfile, target vllm-openai).
VLLM_IMAGE_ENTRYPOINT = (
    "https://github.com/vllm-project/vllm/blob/dead20baf70df70580ecb093f82b0b7b8676e4f5/docker/Dockerfile"
)
# Older vllm/vllm-openai images ran the OpenAI server module instead (same docker/Dockerfile, earlier).
VLLM_IMAGE_ENTRYPOINT_OLDER = (
    "https://github.com/vllm-project/vllm/blob/0000977eaf873be6a295cf73017976d49ca2fb9d/docker/Dockerfile"
)
# SGLang's image sets no ENTRYPOINT (docker/Dockerfile): container arguments alone are run as the command.
SGLANG_IMAGE_DOCKERFILE = (
    "https://github.com/sgl-project/sglang/blob/004740a9cb3dbf6153455fb38b447021e3e07236/docker/Dockerfile"
)
VLLM_CONFIG_FILE = "https://github.com/vllm-project/vllm/blob/v0.33.0/vllm/utils/argparse_utils.py"

NOT_EXAMINED = rule(
    "DEPLOY-NOT-EXAMINED",
    "deploy",
    Severity.INFO,
    "Something the deployment names could not be examined here (a hub id not in the local Hugging Face "
    "cache, a path that exists only inside the container, an environment variable left unexpanded).",
    _HF_CACHE,
    _K8S_ENV_EXPANSION,
)
NO_LAUNCH = rule(
    "DEPLOY-NO-LAUNCH",
    "deploy",
    Severity.INFO,
    "The file (or a container or service in it) names no vLLM or SGLang launch that specprobe recognises.",
    _K8S_CONTAINER,
    _COMPOSE_SERVICES,
)
ENGINE_VERSION = rule(
    "DEPLOY-ENGINE-VERSION",
    "deploy",
    Severity.INFO,
    "Which engine version the deployment was checked against, and where that version came from.",
    "https://github.com/vllm-project/vllm/releases",
    "https://github.com/sgl-project/sglang/releases",
)
VALUE = rule(
    "DEPLOY-VALUE",
    "deploy",
    Severity.ERROR,
    "A value in the deployment file has a type the runtime rejects (args that are not strings, "
    "a speculative_config that is neither a mapping nor JSON).",
    _K8S_CONTAINER,
    VLLM_CONFIG_FILE,
)
ENTRYPOINT_DOUBLED = rule(
    "DEPLOY-ENTRYPOINT-DOUBLED",
    "deploy",
    Severity.ERROR,
    "The container arguments repeat the launcher although the vllm/vllm-openai image's entrypoint already "
    "starts the server (`vllm serve`; `python3 -m vllm.entrypoints.openai.api_server` in older images): "
    "vLLM exits with `unrecognized arguments`.",
    VLLM_IMAGE_ENTRYPOINT,
    VLLM_IMAGE_ENTRYPOINT_OLDER,
)
MANIFEST_SCHEMA = rule(
    "DEPLOY-MANIFEST-SCHEMA",
    "deploy",
    Severity.ERROR,
    "A specprobe manifest does not follow its JSON Schema (specprobe/data/manifest/manifest.schema.json).",
    "https://json-schema.org/draft/2020-12/json-schema-core",
)
ENTRYPOINT_ASSUMED = rule(
    "DEPLOY-ENTRYPOINT-ASSUMED",
    "deploy",
    Severity.INFO,
    "Only arguments are given and the image's entrypoint is not known: the engine launcher was assumed "
    "from the arguments (vLLM's `vllm serve`, SGLang's `python3 -m sglang.launch_server`).",
    VLLM_IMAGE_ENTRYPOINT,
    "https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/",
)
NO_ENTRYPOINT = rule(
    "DEPLOY-NO-ENTRYPOINT",
    "deploy",
    Severity.ERROR,
    "Only flags are given to an image without an entrypoint (lmsysorg/sglang): the container tries to run "
    "the first flag as a program and never starts the server.",
    SGLANG_IMAGE_DOCKERFILE,
    "https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/",
)
