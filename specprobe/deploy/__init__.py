"""Deployments: every input form (launch command, shell script, Kubernetes and any custom resource
holding a container, compose, Dockerfile, Ray Serve LLM config, SkyPilot task, llm-d values, vLLM
recipe, srt-slurm recipe, vLLM --config, specprobe's own manifest, rendered Helm charts and kustomize overlays) parsed
into one ``Deployment`` model that lint and gate run on.

This package imports no YAML or TOML reader at import time; ``specprobe.deploy.loader`` does, when a file is read.
"""

from specprobe.deploy.argv import ServeCommand, parse_command
from specprobe.deploy.model import Deployment, SourceMap, VersionSource, deployment_from_argv

__all__ = ["Deployment", "ServeCommand", "SourceMap", "VersionSource", "deployment_from_argv", "parse_command"]
