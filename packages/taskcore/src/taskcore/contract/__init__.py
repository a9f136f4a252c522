"""The v1 workflow task contract: frozen wire types, validation, observation signing.

Capability ``agentscm.agent-workflow-tasks/v1``, schema version 1. Every type decodes
strictly with :class:`taskcore.codec.Codec`; ``docs/contract.md`` lists every field, bound and
digest domain.

>>> CAPABILITY, SCHEMA_VERSION
('agentscm.agent-workflow-tasks/v1', 1)
>>> from taskcore.codec import decode
>>> decode(AgentIdentity, b'{"owner_id": "acme", "agent_id": "agent-1", "admin": true}')
Traceback (most recent call last):
taskcore.errors.TaskError: unknown field 'admin'; version 1 accepts only documented fields at $.admin
"""

from taskcore.contract.assertion import (
    CriterionResult,
    ExecutorProvenance,
    TaskResultAssertion,
    validate_against_attempt,
    validate_against_task,
)
from taskcore.contract.attempt import WorkflowTaskAttempt, attempt_digest
from taskcore.contract.collector import (
    CollectorProfile,
    CommandCollectorProfile,
    CommandRecipe,
    FiniteReviewCollectorProfile,
    IsolationPolicy,
    NetworkAccess,
    SandboxMode,
    TransportBasis,
    decode_collector_profile,
)
from taskcore.contract.common import (
    CAPABILITY,
    SCHEMA_MISMATCH_ACTION,
    SCHEMA_VERSION,
    SUPPORTED_SCHEMA_VERSIONS,
    ActionClass,
    AgentIdentity,
    AssertionOutcome,
    CriterionMode,
    CriterionOutcome,
    ExecutorBinding,
    GraphStatus,
    SchemaMismatch,
    TrustClass,
    WorkflowProgression,
    schema_mismatch,
)
from taskcore.contract.enrollment import ExecutorEnrollment, ExecutorRevocation
from taskcore.contract.identity import request_canonical_bytes, request_digest
from taskcore.contract.observation import (
    observation_digest,
    observation_signing_bytes,
    sign_observation,
    verify_observation,
)
from taskcore.contract.paths import validate_reference_path
from taskcore.contract.recovery import (
    ConfirmedEffect,
    Disposition,
    FenceSupersession,
    ObservedState,
    RecoveryAction,
    TaskRecoveryEnvelope,
    UnresolvedEffect,
    permitted_actions,
)
from taskcore.contract.requests import (
    InstructionsRequest,
    MutationAction,
    ReferenceFetchRequest,
    ReferenceFetchResponse,
    ReferenceStatus,
    TaskClaimRequest,
    TaskMutationRequest,
    TaskStatusRequest,
)
from taskcore.contract.task import (
    InstructionEntrypoint,
    InstructionEntrypointResponse,
    NamedReference,
    TaskCriterion,
    WorkflowTask,
    WorkflowTaskSubject,
    subject_digest,
    task_digest,
)

__all__ = [
    "CAPABILITY",
    "SCHEMA_MISMATCH_ACTION",
    "SCHEMA_VERSION",
    "SUPPORTED_SCHEMA_VERSIONS",
    "ActionClass",
    "AgentIdentity",
    "AssertionOutcome",
    "CollectorProfile",
    "CommandCollectorProfile",
    "CommandRecipe",
    "ConfirmedEffect",
    "CriterionMode",
    "CriterionOutcome",
    "CriterionResult",
    "Disposition",
    "ExecutorBinding",
    "ExecutorEnrollment",
    "ExecutorProvenance",
    "ExecutorRevocation",
    "FenceSupersession",
    "FiniteReviewCollectorProfile",
    "GraphStatus",
    "InstructionEntrypoint",
    "InstructionEntrypointResponse",
    "InstructionsRequest",
    "IsolationPolicy",
    "MutationAction",
    "NamedReference",
    "NetworkAccess",
    "ObservedState",
    "RecoveryAction",
    "ReferenceFetchRequest",
    "ReferenceFetchResponse",
    "ReferenceStatus",
    "SandboxMode",
    "SchemaMismatch",
    "TaskClaimRequest",
    "TaskCriterion",
    "TaskMutationRequest",
    "TaskRecoveryEnvelope",
    "TaskResultAssertion",
    "TaskStatusRequest",
    "TransportBasis",
    "TrustClass",
    "UnresolvedEffect",
    "WorkflowProgression",
    "WorkflowTask",
    "WorkflowTaskAttempt",
    "WorkflowTaskSubject",
    "attempt_digest",
    "decode_collector_profile",
    "observation_digest",
    "observation_signing_bytes",
    "permitted_actions",
    "request_canonical_bytes",
    "request_digest",
    "schema_mismatch",
    "sign_observation",
    "subject_digest",
    "task_digest",
    "validate_against_attempt",
    "validate_against_task",
    "validate_reference_path",
    "verify_observation",
]
