"""Helm charts and kustomize overlays rendered into the manifests they produce, with the tools
themselves (``helm template DIR``, ``kustomize build DIR``) when they are on PATH. Without the tool
the folder is reported as not rendered; its raw templates are never read as manifests.

Neither tool runs code from the input here: ``helm template`` evaluates Go templates and fetches no
dependencies without ``--dependency-update``; ``kustomize build`` runs no exec or container plugins
unless asked with ``--enable-alpha-plugins``/``--enable-exec``.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from specprobe.findings import SpecprobeError

_TIMEOUT_S = 120.0
_KUSTOMIZATIONS = ("kustomization.yaml", "kustomization.yml", "Kustomization")


@dataclass(frozen=True)
class RenderRoot:
    """A folder that a tool renders: ``tool`` is ``helm`` or ``kustomize``."""

    folder: Path
    tool: str

    @property
    def command(self) -> list[str]:
        verb = "template" if self.tool == "helm" else "build"
        return [self.tool, verb, str(self.folder)]


class NotRenderedError(SpecprobeError):
    """The tool is not on PATH: the folder was not rendered (information, not a failure)."""


def render_root(folder: Path) -> RenderRoot | None:
    """The chart (``Chart.yaml``) or overlay (``kustomization.yaml``) rooted at ``folder``, if any."""
    if (folder / "Chart.yaml").is_file():
        return RenderRoot(folder, "helm")
    if any((folder / name).is_file() for name in _KUSTOMIZATIONS):
        return RenderRoot(folder, "kustomize")
    return None


def render(root: RenderRoot) -> str:
    """The manifests ``root`` renders to; NotRenderedError without the tool, SpecprobeError (one
    line: the tool's first error line) when the tool refuses the folder."""
    binary = shutil.which(root.tool)
    if binary is None:
        raise NotRenderedError(
            f"{root.folder}: not rendered: {root.tool} not found on PATH "
            f"(run `{' '.join(root.command)} | specprobe gate -`)"
        )
    try:
        done = subprocess.run(
            [binary, *root.command[1:]], capture_output=True, text=True, timeout=_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        shown = " ".join(root.command)
        raise SpecprobeError(f"{root.folder}: `{shown}` did not finish in {_TIMEOUT_S:.0f} s") from None
    except OSError as exc:
        raise SpecprobeError(f"{root.folder}: `{' '.join(root.command)}` could not start: {exc}") from None
    if done.returncode != 0:
        first = next((line for line in done.stderr.splitlines() if line.strip()), f"exit {done.returncode}")
        raise SpecprobeError(f"{root.folder}: `{' '.join(root.command)}` failed: {first.strip()[:300]}")
    return done.stdout
