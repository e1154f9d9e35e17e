"""Which engine version a deployment runs: its manifest, ``--engine``, its image tag, the live install,
else the newest shipped snapshot (in that order), and what a known engine image runs by itself.
"""

from __future__ import annotations

import os
import re
import subprocess
from functools import lru_cache
from pathlib import Path

from packaging.version import InvalidVersion, Version

from specprobe.deploy.model import Deployment, VersionSource
from specprobe.engines.spec import DISTRIBUTIONS, EngineSpec
from specprobe.schema.store import latest_version

# A release tag: v0.16.0, 0.5.23, v0.4.6.post1, v0.5.23-cu129, v0.10.1rc1-x86_64.
_RELEASE_TAG = re.compile(r"^v?(\d+\.\d+(?:\.\d+)*(?:(?:\.post|rc|a|b)\d+)?)(?:[-_+].*)?$")
# vLLM's own images run `vllm serve` as their entrypoint (older ones `python3 -m
# vllm.entrypoints.openai.api_server`, which reads the same flags); the CPU, ROCm and TPU variants alike.
_VLLM_IMAGE = re.compile(r"(^|/)vllm/vllm-openai(-[a-z0-9]+)?$")
VLLM_ENTRYPOINT = ("vllm", "serve")
# SGLang's images set no ENTRYPOINT: arguments alone are run as the command.
_NO_ENTRYPOINT_IMAGE = re.compile(r"(^|/)lmsysorg/sglang$")
_LIVE_TIMEOUT_S = 20.0
# Images that bundle an engine under another project's release numbers (NVIDIA Dynamo's
# ai-dynamo/vllm-runtime:0.6.1 is Dynamo 0.6.1): their tag is no engine version.
_BUNDLING_IMAGE = re.compile(r"(^|/)ai-dynamo/|(^|/)dynamo[^/]*$|(^|/)llm-d[^/]*$")


def split_image(image: str) -> tuple[str, str | None]:
    """``registry/repo:tag@sha256:...`` -> (``registry/repo``, tag or None). Digests carry no version."""
    name = image.split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        repository, _, tag = name.rpartition(":")
        return repository, tag or None
    return name, None


def image_engine(image: str) -> str | None:
    """The engine an image is named after (``vllm/vllm-openai`` -> vllm, ``lmsysorg/sglang`` -> sglang)."""
    repository = split_image(image)[0].lower()
    repo_name = repository.rsplit("/", 1)[-1]
    if "sglang" in repo_name:
        return "sglang"
    if "vllm" in repo_name:
        return "vllm"
    return None


def image_version(image: str, engine: str) -> str | None:
    """The engine release an image tag names, when the image is that engine's; latest/nightly/digests: None."""
    if image_engine(image) != engine or _BUNDLING_IMAGE.search(split_image(image)[0].lower()):
        return None
    tag = split_image(image)[1]
    if tag is None:
        return None
    match = _RELEASE_TAG.match(tag)
    if match is None:
        return None
    try:
        return str(Version(match.group(1)))
    except InvalidVersion:
        return None


def image_entrypoint(image: str | None) -> tuple[str, ...] | None:
    """The entrypoint a known engine image runs (vllm/vllm-openai: ``vllm serve``); None when unknown
    or when the image has none (lmsysorg/sglang runs its arguments as the command)."""
    if image is None:
        return None
    repository = split_image(image)[0].lower()
    if _VLLM_IMAGE.search(repository):
        return VLLM_ENTRYPOINT
    return None


def image_without_entrypoint(image: str | None) -> bool:
    """Whether ``image`` is known to have no entrypoint (lmsysorg/sglang)."""
    return image is not None and bool(_NO_ENTRYPOINT_IMAGE.search(split_image(image)[0].lower()))


@lru_cache(maxsize=4)
def live_version(engine: str) -> str | None:
    """The engine version installed in ``SPECPROBE_<ENGINE>_PYTHON``, when that variable is set.

    Only the distribution metadata is read in that interpreter (the engine is never imported).
    """
    python = os.environ.get(f"SPECPROBE_{engine.upper()}_PYTHON")
    if not python or not Path(python).expanduser().exists():
        return None
    names = ",".join(repr(name) for name in DISTRIBUTIONS[engine])
    script = (
        "import importlib.metadata as m\n"
        f"for n in ({names},):\n"
        "    try:\n        print(m.version(n)); break\n"
        "    except m.PackageNotFoundError:\n        pass\n"
    )
    try:
        reply = subprocess.run(
            [str(Path(python).expanduser()), "-c", script],
            capture_output=True,
            text=True,
            timeout=_LIVE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    version = reply.stdout.strip().splitlines()[-1] if reply.returncode == 0 and reply.stdout.strip() else None
    try:
        return str(Version(version)) if version else None
    except InvalidVersion:
        return None


def resolve_engine_version(deployment: Deployment, option: EngineSpec | None = None) -> None:
    """Set ``deployment.engine`` to one version and ``version_source`` to where it came from."""
    engine = deployment.engine_name
    if engine is None:
        return
    current = deployment.engine
    if deployment.version_source is VersionSource.MANIFEST and current is not None and current.version:
        return
    if option is not None and option.engine == engine and option.version is not None:
        deployment.engine, deployment.version_source = option, VersionSource.OPTION
        return
    if deployment.image:
        from_tag = image_version(deployment.image, engine)
        if from_tag is not None:
            deployment.engine, deployment.version_source = EngineSpec(engine, version=from_tag), VersionSource.IMAGE_TAG
            return
    installed = live_version(engine)
    if installed is not None:
        deployment.engine, deployment.version_source = EngineSpec(engine, version=installed), VersionSource.LIVE
        return
    deployment.engine = EngineSpec(engine, version=latest_version(engine))
    deployment.version_source = VersionSource.SNAPSHOT
