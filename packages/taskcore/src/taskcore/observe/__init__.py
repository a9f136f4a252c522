"""Operator reads (the audit feed, the backlog, approvals, tokens, repositories, Changes,
subjects, counts) and token operations, on the same registry as every other operation.
"""
