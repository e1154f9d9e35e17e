"""Rule families: each module of this package defines the rules of one family (layout, vocab, compat,
...) and the checks that fire them; ``rules.catalog.FAMILY_MODULES`` is the explicit table of family
modules, the DEPLOY-* catalogue beside the deployment parsers (``specprobe.deploy.rules``) included.

What a rule is, and the registry they all register into, is ``specprobe.ruledef``, re-exported here so
that a family module reads ``from specprobe.rules import rule``. A rule's longer documentation
(``why``, ``fix``) has one home, ``specprobe/data/rule_docs.toml``, read only by the explaining paths
(``ruledocs.documented``); the ``specprobe rules`` listing and the generated docs are built from ``RULES``.
"""

from __future__ import annotations

from specprobe.ruledef import RULES, AppliesTo, Rule, RuleStatus, rule, within_lifecycle

__all__ = ["RULES", "AppliesTo", "Rule", "RuleStatus", "rule", "within_lifecycle"]
