"""Hypothesis settings for the fuzz tests: few examples and no deadline by default so the suite stays
fast and steady on a loaded CI machine; ``SPECPROBE_FUZZ_EXAMPLES`` raises the count for a campaign."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "specprobe-fuzz",
    max_examples=int(os.environ.get("SPECPROBE_FUZZ_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
    database=None,
)
EXAMPLES = settings.get_profile("specprobe-fuzz")
