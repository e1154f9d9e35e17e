"""Deployment-file rules: what a Kubernetes manifest, compose file, script, vLLM config or specprobe
manifest says about a launch before any engine rule can run on it."""

from __future__ import annotations

from specprobe.findings import Severity
from specprobe.rules import rule

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
    why=(
        "A gate that passes on what it never read gives false confidence: the drafter's checkpoint, the "
        "target's config.json and values behind variables decide whether speculation works, and none of them "
        'was read for this deployment.'
    ),
    fix=(
        'Give specprobe local copies: `huggingface-cli download REPO config.json` (add the weights to check '
        'the drafter fully), point `target`/`draft` of a specprobe manifest at local folders beside a launch '
        'that names container paths, or define the variable in the file. `--strict` makes these warnings.'
    ),
)
NO_LAUNCH = rule(
    "DEPLOY-NO-LAUNCH",
    "deploy",
    Severity.INFO,
    "The file (or a container or service in it) names no vLLM or SGLang launch that specprobe recognises.",
    _K8S_CONTAINER,
    _COMPOSE_SERVICES,
    why=(
        'specprobe recognises `vllm serve`, `python -m vllm.entrypoints.openai.api_server`, `sglang serve` '
        'and `python -m sglang.launch_server`, directly, through a shell (`sh -c`), `docker run`, common '
        "wrappers, or an engine image's entrypoint. An engine image that runs something else (a wrapper "
        'script) cannot be checked.'
    ),
    fix=(
        'Launch the engine with one of the recognised commands, or describe the deployment in a specprobe '
        'manifest (`launch`, or `engine` + `target` + `draft`).'
    ),
)
ENGINE_VERSION = rule(
    "DEPLOY-ENGINE-VERSION",
    "deploy",
    Severity.INFO,
    "Which engine version the deployment was checked against, and where that version came from.",
    "https://github.com/vllm-project/vllm/releases",
    "https://github.com/sgl-project/sglang/releases",
    why=(
        'Flags, speculative methods and known-broken pairings change between releases; every engine rule is '
        'evaluated for one version, taken from the manifest, `--engine`, the image tag, the live install or '
        'the newest shipped snapshot, in that order.'
    ),
    fix=(
        'Pin the image to a release tag (`vllm/vllm-openai:v0.16.0`, `lmsysorg/sglang:v0.5.23-cu129`) or name'
        ' `engine: vllm==X` in a manifest, so that the gate checks the version that will run.'
    ),
)
VALUE = rule(
    "DEPLOY-VALUE",
    "deploy",
    Severity.ERROR,
    "A value in the deployment file has a type the runtime rejects (args that are not strings, "
    "a speculative_config that is neither a mapping nor JSON).",
    _K8S_CONTAINER,
    VLLM_CONFIG_FILE,
    why=(
        'Kubernetes rejects a container whose `command`/`args` are not lists of strings, Compose a `command` '
        'that is neither a string nor a list, and a shell refuses a script with an unclosed quote; the '
        'deployment never starts.'
    ),
    fix=(
        'Write `command`/`args` as YAML lists of strings (quote numbers and JSON), and check the quoting of '
        '`sh -c` scripts.'
    ),
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
    why=(
        "Container `args` (Compose `command`, a Dockerfile `CMD`) are appended to the image's entrypoint. "
        "vllm/vllm-openai's entrypoint already starts the server, so `vllm serve MODEL` in the arguments "
        'becomes `vllm serve vllm serve MODEL` and the server exits at start with `unrecognized arguments`.'
    ),
    fix=(
        'Give only the model and flags as arguments, or set `command` (Compose `entrypoint`) to the full '
        'launch.'
    ),
)
MANIFEST_SCHEMA = rule(
    "DEPLOY-MANIFEST-SCHEMA",
    "deploy",
    Severity.ERROR,
    "A specprobe manifest does not follow its JSON Schema (specprobe/data/manifest/manifest.schema.json).",
    "https://json-schema.org/draft/2020-12/json-schema-core",
    why=(
        'A manifest that does not follow the schema would be read differently than its author meant (an '
        'unknown key is a typo whose setting is lost).'
    ),
    fix=(
        'Fix the key or value at the reported line; the schema is '
        '`specprobe/data/manifest/manifest.schema.json`.'
    ),
)
ENTRYPOINT_ASSUMED = rule(
    "DEPLOY-ENTRYPOINT-ASSUMED",
    "deploy",
    Severity.INFO,
    "Only arguments are given and the image's entrypoint is not known: the engine launcher was assumed "
    "from the arguments (vLLM's `vllm serve`, SGLang's `python3 -m sglang.launch_server`).",
    VLLM_IMAGE_ENTRYPOINT,
    "https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/",
    why=(
        "Only arguments are given, so what runs depends on the image's entrypoint, which specprobe does not "
        'know for this image; the arguments were linted as the engine launch they are written for.'
    ),
    fix=(
        'Set `command` explicitly (e.g. `["vllm", "serve"]`) so that the launch does not depend on the image.'
    ),
)
NO_ENTRYPOINT = rule(
    "DEPLOY-NO-ENTRYPOINT",
    "deploy",
    Severity.ERROR,
    "Only flags are given to an image without an entrypoint (lmsysorg/sglang): the container tries to run "
    "the first flag as a program and never starts the server.",
    SGLANG_IMAGE_DOCKERFILE,
    "https://kubernetes.io/docs/tasks/inject-data-application/define-command-argument-container/",
    why=(
        "SGLang's image sets no ENTRYPOINT, so arguments alone become the container's command: the runtime "
        'tries to execute `--model-path` and the container exits without starting the server.'
    ),
    fix=(
        'Set `command: ["python3", "-m", "sglang.launch_server"]` (Compose `entrypoint`) and keep the flags '
        'as arguments.'
    ),
)
