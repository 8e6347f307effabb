"""The fuzz suite's settings: hypothesis runs a bounded number of examples per property
(J0_FUZZ_EXAMPLES, default 40), derandomised (the same examples on every run, so CI is
reproducible), with no per-example deadline (a slow shared runner is not a failure: nothing here
asserts time), and no example database written into the checkout."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "j0-fuzz",
    max_examples=int(os.environ.get("J0_FUZZ_EXAMPLES", "40")),
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("j0-fuzz")
