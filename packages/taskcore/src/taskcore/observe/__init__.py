"""Operator reads and token operations, on the same registry as every other operation.

The audit feed, the backlog, approvals, tokens, repositories, Changes, subjects and counts.
"""
