"""The doors into the one pipeline that sit above it: `lint` is the gate over one deployment built
from a serve command's argv.

This module sits above both ``specprobe.gate`` and ``specprobe.lint``: gate examines a deployment with
lint's rules (gate -> lint), and lint of a command line is that same examination (pipeline -> gate), so
neither of the two needs to import the other from inside a function.
"""

from __future__ import annotations

from specprobe.deploy.model import deployment_from_argv
from specprobe.engine_spec import EngineSpec, parse_engine_spec
from specprobe.findings import Report, SpecprobeError
from specprobe.gate import gate_deployments

__all__ = ["lint_command"]


def lint_command(
    argv: list[str], *, engine: str | None = None, strict: bool = False, device: str | None = None
) -> Report:
    """Lint one serve command, and check the drafter and target it names where they are on this machine.

    ``device`` (``--device cpu``) overrides the command's own ``--device``. SpecprobeError when it is not a
    serve command, ``engine`` does not match it, or no snapshot exists.
    """
    deployment = deployment_from_argv(argv)
    if device:
        deployment.device = device
    if engine:
        spec = parse_engine_spec(engine, allow_range=False)
        if spec.engine != deployment.engine_name:
            raise SpecprobeError(f"--engine {engine} does not match the command, which runs {deployment.engine_name}")
        deployment.engine = spec
    option: EngineSpec | None = deployment.engine if engine else None
    report = gate_deployments([deployment], engine=option, strict=strict, command="lint")
    if deployment.device:
        report.subject["device"] = deployment.device
    return report
