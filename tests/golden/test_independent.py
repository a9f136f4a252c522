"""The independent checker (``tests/golden/independent.py``) over every golden vector.

It is a second implementation of what the vectors pin, written from the documents with the
standard library and PyNaCl; the last test proves, in a fresh interpreter, that it imports
nothing of taskcore.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.golden import independent

ROOT = Path(__file__).resolve().parents[2]
OBSERVATIONS = independent.vectors("observations")
DIGESTS = independent.vectors("digests")
NEGATIVE = independent.vectors("negative")


def test_every_set_is_there():
    assert len(OBSERVATIONS) >= 6
    assert len(DIGESTS) >= 11
    assert len(NEGATIVE) >= 8


@pytest.mark.parametrize("path", OBSERVATIONS, ids=lambda p: p.stem)
def test_an_observation_vector_rebuilds_independently(path):
    independent.check_observation(independent.load(path))


@pytest.mark.parametrize("path", DIGESTS, ids=lambda p: p.stem)
def test_a_digest_vector_rebuilds_independently(path):
    independent.check_digest(independent.load(path))


@pytest.mark.parametrize("path", NEGATIVE, ids=lambda p: p.stem)
def test_a_negative_vector_is_refused_independently_with_its_code_and_path(path):
    vector = independent.load(path)
    assert independent.refusal_of(vector) == (vector["error"]["code"], vector["error"]["path"])


def test_the_checker_notices_a_changed_byte():
    vector = independent.load(OBSERVATIONS[0])
    changed = dict(vector, signing_json=vector["signing_json"].replace('"fence":1', '"fence":2'))
    with pytest.raises(AssertionError):
        independent.check_observation(changed)
    negative = independent.load(NEGATIVE[0])
    assert independent.refusal_of(dict(negative, type="AgentIdentity")) != (
        negative["error"]["code"],
        negative["error"]["path"],
    )


def test_the_checker_uses_no_taskcore_module():
    probe = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.golden import independent\n"
        "problems = independent.check_all()\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] == 'taskcore')\n"
        "print(json.dumps({'problems': problems, 'taskcore': loaded}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"problems": [], "taskcore": []}
