"""Where a model is, behind one reader: a local folder, a hub repository ``owner/name[@revision]``, or a
hub repository already in the local Hugging Face cache.

``locate`` turns what a user or a deployment wrote into ``ModelFiles``; check, lint, gate, fix, exact
mode, matrix and smoke --hidden-states all read drafters and targets through it, so that every command
accepts the same forms and reads them within the same bounds (``checkpoint.tensors.TensorReader`` reads
single tensors of a located model through it: a target's embedding or head, alone).
``resolve_config_path`` finds a target's config.json through it.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from specprobe.findings import SpecprobeError
from specprobe.hfconfig import MAX_CONFIG_BYTES, hub_cache_dir
from specprobe.modelfiles.base import ModelFiles, ModelUnavailableError, TensorReadError, Unavailable
from specprobe.modelfiles.hub import HUB_POLICIES, HubFiles, HubRef, HubSession, parse_hub_ref
from specprobe.modelfiles.local import LocalFiles
from specprobe.untrusted.files import UntrustedInputError, exists, expand_user, is_dir, is_file

__all__ = [
    "HUB_POLICIES",
    "HubFiles",
    "HubRef",
    "HubSession",
    "LocalFiles",
    "ModelFiles",
    "ModelUnavailableError",
    "TensorReadError",
    "Unavailable",
    "hub_ref",
    "locate",
    "resolve_config_path",
]


def hub_ref(spec: str, *, revision: str | None = None, base_dir: Path | None = None) -> HubRef | None:
    """``spec`` as a hub repository when it names one and no file or folder of that name exists here
    (a path wins, as it does for the engines); None otherwise."""
    if not spec or spec.startswith((".", "/", "~", "\\")):
        return None
    path = expand_user(spec)
    if exists(path) or (base_dir is not None and not path.is_absolute() and exists(base_dir / path)):
        return None
    return parse_hub_ref(spec, revision)


def locate(
    spec: str | Path,
    *,
    role: str,
    hub: HubSession | None = None,
    revision: str | None = None,
    base_dir: Path | None = None,
) -> ModelFiles:
    """The files of the model ``spec`` names (``role``: ``draft`` or ``target``).

    A folder (or, for a target, a config.json path) on this machine is read in place; a hub id is read
    through ``hub`` (a fresh session when None). SpecprobeError (exit 2) for a path that does not exist
    and is no hub id; ModelUnavailableError, a SpecprobeError, when the hub cannot give it.
    """
    text = str(spec)
    path = expand_user(text)
    if base_dir is not None and not path.is_absolute():
        path = base_dir / path
    if is_dir(path):
        return LocalFiles(path, label=text if base_dir is not None else str(path))
    if role == "target" and is_file(path):
        return LocalFiles(path.parent, label=text)
    ref = hub_ref(text, revision=revision, base_dir=base_dir) if not isinstance(spec, Path) else None
    if ref is not None and role == "draft" and "/" not in ref.repo_id:
        # Drafters are published as OWNER/NAME; a bare name that is no folder here is a folder misspelt.
        ref = None
    if ref is None:
        if role == "draft":
            if exists(path):
                raise SpecprobeError(f"draft {path} is not a folder")
            raise SpecprobeError(f"draft folder {path} does not exist (nor is it a hub id OWNER/NAME[@REVISION])")
        raise SpecprobeError(f"target {text!r} is neither a folder, a config.json, nor a hub id")
    return (hub if hub is not None else HubSession()).open(ref, role)


def resolve_config_path(spec: str, *, hub: HubSession | None = None) -> Path:
    """A target given as a folder, a config.json path, or a hub id ``owner/name[@revision]``.

    A hub id is read through ``locate`` (only config.json travels; ``hub`` is the run's
    ``HubSession``, a fresh one when None): the path returned is the copy kept in specprobe's hub cache
    at the resolved commit. SpecprobeError (``ModelUnavailableError`` for a hub that refuses or cannot be
    reached) when there is no such target.
    """
    path = expand_user(spec)
    if is_dir(path):
        return path / "config.json"
    if is_file(path):
        return path
    if hub_ref(spec) is None:
        raise SpecprobeError(f"target {spec!r} is neither a folder, a config.json, nor a hub id")
    files = locate(spec, role="target", hub=hub)
    # The reader of the returned path says what is wrong with it.
    with contextlib.suppress(OSError, UntrustedInputError):
        files.read_file("config.json", max_bytes=MAX_CONFIG_BYTES)
    kept = files.local_path("config.json")
    if kept is not None:
        return kept
    return (files.folder or hub_cache_dir() / "missing") / "config.json"
