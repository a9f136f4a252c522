"""An in-process collector flow over one service: the authority side driven end to end."""

from __future__ import annotations

import json
import shutil

import pytest
from taskcore.actors import Tier
from taskcore.auth import issue_token
from taskcore.codec import default_codec
from taskcore.collector.collect import collect_command
from taskcore.collector.state import CollectorState
from taskcore.contract.collector_descriptor import (
    CollectorDescriptor,
)
from taskcore.contract.collector_records import SandboxMode
from taskcore.errors import TaskError
from taskcore.evidence.profiles import install_collector_profile
from taskcore.service import Route, Service

from tests.taskcore.collector.conftest import head


class Flow:
    def __init__(self, authority, state, tmp_path, command=None):
        self.authority = authority
        self.state = state
        self.tmp_path = tmp_path
        self.clock = authority.clock
        install_collector_profile(authority.storage, self.clock, profile=authority.profile(command))
        self.service = Service.open(tmp_path / "data", clock=self.clock)
        self.token = issue_token(
            self.service.storage, self.clock, workspace="w1", tier=Tier.AGENT
        ).token
        self.route = Route(repository="acme", profile="default")
        self.n = 0

    def call(self, op, request, token=None):
        body = json.dumps({"operation": op, "request": request}).encode()
        return self.service.call_workflow(token or self.token, body, route=self.route).json()[
            "result"
        ]

    def upload(self, envelope, token=None):
        return self.service.call_workflow(
            token or self.token, envelope, route=self.route, operation="collector_upload"
        ).json()["result"]

    def checkpoint(self, change="c1"):
        return self.call(
            "checkpoint",
            {"version": 1, "change_id": change, "commit": head(self.authority.repo), "context": ""},
        )

    def qualification(self, change="c1", token=None):
        return self.call("qualification", {"version": 1, "change_id": change}, token)

    def claim(self, task_id, task_digest):
        self.n += 1
        return self.call(
            "collector_claim",
            {
                "version": 1,
                "request_id": f"claim-{self.n}",
                "task_id": task_id,
                "task_digest": task_digest,
                "execution_operation_id": f"op-{self.n}",
                "requested_lease_ms": 600_000,
            },
        )

    def descriptor(self, claimed):
        raw = self.call(
            "collector_descriptor",
            {
                "version": 1,
                "task_id": claimed["task_id"],
                "task_digest": claimed["task_digest"],
                "attempt_id": claimed["attempt"]["attempt_id"],
            },
        )
        return default_codec().structure(raw, CollectorDescriptor)

    def claim_next(self, change="c1"):
        q = self.qualification(change)
        assert q["next"]["operation"] == "collector_claim"
        task = next(t for t in q["tasks"] if t["task_id"] == q["next"]["task_id"])
        claimed = self.claim(task["task_id"], task["task_digest"])
        return claimed, self.descriptor(claimed)

    def collect(self, descriptor, state=None):
        return collect_command(
            descriptor,
            state=state or self.state,
            repository=self.authority.repo,
            sandbox=SandboxMode.NONE,
        ).envelope

    def finalize(self, change="c1"):
        return self.call("collector_finalize", {"version": 1, "change_id": change})

    def run_to_receipt(self):
        self.checkpoint()
        claimed, descriptor = self.claim_next()
        envelope = self.collect(descriptor)
        view = self.upload(envelope)
        return claimed, descriptor, envelope, view


def refused(fn, *args):
    with pytest.raises(TaskError) as err:
        fn(*args)
    return err.value.code


def clone_state(flow, name):
    other = CollectorState.open(flow.tmp_path / name, create=True)
    shutil.copy(flow.state.key_path, other.key_path)
    return other
