"""Hypothesis settings for the fuzz tests: few examples and no deadline by default so the suite stays
fast and steady on a loaded CI machine; ``SPECPROBE_FUZZ_EXAMPLES`` raises the count for a campaign."""

from __future__ import annotations

import contextlib
import os
import warnings

from hypothesis import HealthCheck, settings

settings.register_profile(
    "specprobe-fuzz",
    max_examples=int(os.environ.get("SPECPROBE_FUZZ_EXAMPLES", "30")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
    database=None,
)
EXAMPLES = settings.get_profile("specprobe-fuzz")

# On a failure hypothesis imports libcst to suggest a patch; libcst's import emits a DeprecationWarning
# that filterwarnings=error turns into a pytest INTERNALERROR hiding the falsifying example. Importing
# it here first, with that warning ignored, keeps failures readable.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    with contextlib.suppress(ImportError):
        import hypothesis.extra._patching  # noqa: F401
