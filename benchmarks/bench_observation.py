"""Signed-observation intake: strict decode + canonicalise + digest + Ed25519 verify per second.

    .venv/bin/python benchmarks/bench_observation.py [--seconds 1.0] [--repeat 5]

The workload is a typical registered observation as it travels: 8 criterion rows, 3 findings
and 2 evidence digests each, signed with a test key. Two paths run over the same bytes in the
same process, interleaved, best of ``--repeat`` rounds each:

* taskcore: ``Codec.decode(TaskResultAssertion, raw)`` (bounded parse, strict structure, every
  wire rule) then ``verify_observation`` (canonical signing bytes with a null provenance,
  domain-separated SHA-256, recomputed-digest check, strict Ed25519 verify);
* baseline: ``json.loads(raw)``, ``hashlib.sha256`` over the same domain prefix and the same
  signing bytes (precomputed, so the baseline does no serialization at all), and a bare
  PyNaCl ``VerifyKey.verify`` of the same signature.

The ratio is baseline/taskcore throughput: how many times more work the strict path does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import time
from collections.abc import Callable

import nacl.signing
from taskcore.codec import Codec
from taskcore.contract import (
    AgentIdentity,
    AssertionOutcome,
    CriterionOutcome,
    CriterionResult,
    ExecutorBinding,
    TaskResultAssertion,
    TrustClass,
    observation_signing_bytes,
    sign_observation,
    verify_observation,
)
from taskcore.digest import OBSERVATION_DOMAIN
from taskcore.limits import ASSERTION_MAX_BYTES
from taskcore.signing import public_key_hex

SEED = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60"  # RFC 8032 test 1


def typical_observation() -> TaskResultAssertion:
    def h(label: str) -> str:
        return hashlib.sha256(label.encode()).hexdigest()

    rows = tuple(
        CriterionResult(
            criterion=f"criterion-{i}",
            outcome=CriterionOutcome.PASSED if i % 4 else CriterionOutcome.NOT_CLAIMED,
            findings=(
                f"check {i}: 412 passed, 0 failed in 9.1s",
                f"src/module_{i}.py:120: warning: unused import 'os'",
                "coverage 93% (lines), 88% (branches) \u2014 \u2713",
            ),
            evidence_digests=(h(f"junit-{i}.xml"), h(f"log-{i}.txt")),
        )
        for i in range(8)
    )
    unsigned = TaskResultAssertion(
        version=1,
        task_id="task-0123456789",
        task_digest=h("task"),
        attempt_id="attempt-0123456789",
        attempt_digest=h("attempt"),
        request_id="result-0123456789",
        execution_operation_id="exec-0123456789",
        agent=AgentIdentity(owner_id="acme", agent_id="agent-1"),
        executor=ExecutorBinding(
            registration_id="reg-1",
            executor_id="laptop-1",
            registration_epoch=3,
            verification_key_id="k1",
        ),
        fence=7,
        trust_class=TrustClass.REGISTERED_EXECUTOR_OBSERVATION,
        outcome=AssertionOutcome.PASSED,
        criteria=rows,
        executor_provenance=None,
    )
    return sign_observation(unsigned, SEED)


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``fn`` over at least ``seconds`` of wall time."""
    calls, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(50):
            fn()
        calls += 50
        now = time.perf_counter()
        if now >= deadline:
            return calls / (now - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="wall time per round")
    parser.add_argument("--repeat", type=int, default=5, help="rounds per path (best counts)")
    args = parser.parse_args()

    codec = Codec()
    signed = typical_observation()
    raw = codec.dumps(signed)
    public = public_key_hex(SEED)
    assert signed.executor_provenance is not None
    signing = observation_signing_bytes(signed)
    prefix = OBSERVATION_DOMAIN.encode() + b"\x00" + len(signing).to_bytes(8, "big")
    signature = bytes.fromhex(signed.executor_provenance.signature)
    verify_key = nacl.signing.VerifyKey(bytes.fromhex(public))

    def taskcore_path() -> None:
        assertion = codec.decode(TaskResultAssertion, raw, max_bytes=ASSERTION_MAX_BYTES)
        verify_observation(assertion, public)

    def baseline_path() -> None:
        json.loads(raw)
        digest = hashlib.sha256(prefix + signing).digest()
        verify_key.verify(digest, signature)

    taskcore_path()  # both paths must succeed before anything is timed
    baseline_path()

    ours, base = [], []
    for _ in range(args.repeat):
        ours.append(rate(taskcore_path, args.seconds))
        base.append(rate(baseline_path, args.seconds))
    best_ours, best_base = max(ours), max(base)

    print(f"machine: {platform.machine()} {platform.processor() or ''} cpus={os.cpu_count()}")
    print(f"python: {platform.python_implementation()} {platform.python_version()}")
    print(
        f"observation: 8 criteria x 3 findings x 2 evidence digests, {len(raw)} bytes as it "
        f"travels, {len(signing)} signing bytes"
    )
    print(
        f"taskcore decode+canonicalise+digest+verify: {best_ours:10.0f} /s "
        f"({1e6 / best_ours:7.1f} us each)"
    )
    print(
        f"baseline json.loads+sha256+PyNaCl verify:   {best_base:10.0f} /s "
        f"({1e6 / best_base:7.1f} us each)"
    )
    print(f"ratio baseline/taskcore: {best_base / best_ours:.2f}x")


if __name__ == "__main__":
    main()
