"""The explicit table of rule family modules, so the registry is complete, and the rules table.

A family module defines its rules when imported. Listing the modules here (instead of importing
whatever the package folder holds) makes the catalogue a reviewed table, as ruff's ``codes.rs`` is:
a new family is one line here, and a test fails when a module of the package is missing from it.
The table lives here rather than in ``rules/__init__.py`` because the family modules import
``rules.rule`` from the package: the package itself cannot import them. One family lives outside the
package: the DEPLOY-* catalogue sits beside the deployment parsers that emit it (``deploy.rules``).
"""

from __future__ import annotations

from types import ModuleType

from specprobe.deploy import rules as deploy
from specprobe.rules import (
    RULES,
    Rule,
    cli_args,
    compat,
    deep,
    dryrun,
    engine_config,
    exact,
    files,
    fix,
    hub,
    internal,
    launch_classes,
    layout,
    lint,
    methods,
    platform,
    quant,
    safety,
    shapes,
    smoke,
    target,
    tokenizer,
    vocab,
)

FAMILY_MODULES: tuple[ModuleType, ...] = (
    files,
    layout,
    vocab,
    shapes,
    target,
    tokenizer,
    methods,
    quant,
    deep,
    safety,
    platform,
    engine_config,
    compat,
    exact,
    fix,
    lint,
    cli_args,
    launch_classes,
    deploy,
    hub,
    dryrun,
    smoke,
    internal,
)
"""Every module that defines rules; importing this module registers them all."""


def all_rules() -> list[Rule]:
    """Every registered rule, sorted by family then ID."""
    return sorted(RULES.values(), key=lambda r: (r.family, r.id))
