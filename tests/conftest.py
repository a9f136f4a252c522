"""Suite-wide test configuration: the Hypothesis profiles.

Two profiles instead of per-test ``max_examples``:

* ``ci`` (chosen when ``CI`` is set, as ``.ci/run`` runs): derandomized, so a CI run is
  reproducible and a failure reproduces locally with ``HYPOTHESIS_PROFILE=ci``; 100 examples;
  no example database; no deadline (a shared CI machine is not a timing instrument).
* ``dev`` (the default elsewhere): random, 50 examples, no deadline, the local example
  database (failures are replayed first on the next run).

``HYPOTHESIS_PROFILE`` picks one explicitly. The few tests whose single example is expensive
(a live server, a state machine, a whole contract type tree) keep their own smaller
``max_examples`` beside the test, saying why.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=100,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.load_profile(
    os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev")
)
