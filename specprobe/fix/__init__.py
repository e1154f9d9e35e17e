"""`specprobe fix`: a corrected copy of a drafter for one engine release, with proof.

``plan`` computes the changes (typed, each a FIX-* finding) from the drafter's files, the target and
what the release reads; ``apply`` writes the copy into a staging folder beside ``--out`` and renames
it at the end; ``proof`` checks the copy, compares checksums and draft logits; ``run`` ties them
together and ``gate`` gives the fix command for a failing deployment.
"""

from specprobe.fix.gate import fix_command
from specprobe.fix.model import FixPlan
from specprobe.fix.plan import build_plan
from specprobe.fix.run import FixOptions, run_fix

__all__ = ["FixOptions", "FixPlan", "build_plan", "fix_command", "run_fix"]
