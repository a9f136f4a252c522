"""The OAuth 2.1 authorization server for MCP clients, as journal rows and registry operations.

What the MCP authorization spec asks of a server (RFC 6749, 7636, 8414, 7591, 7009, 8707,
9207 and 9728), built on the MCP SDK's ``mcp.server.auth`` handlers in the adapters:

* :mod:`~taskcore.scopes`: the scopes and how they map to tiers and autonomy;
* :mod:`~taskcore.oauth_tokens`: the secrets (codes, access and refresh tokens: only their
  SHA-256 is stored) and authenticating an access token into an :class:`~taskcore.Actor`;
* :mod:`~taskcore.oauth.cimd`: fetching a client ID metadata document (bounded, never to a
  private address unless the operator allowed it);
* :mod:`~taskcore.oauth.server`: :class:`~taskcore.oauth.server.OAuthServer`, the protocol
  steps the HTTP adapter's endpoints call (register, authorize, exchange, refresh, revoke),
  each one transaction with its audit event;
* :mod:`~taskcore.oauth.operations`: consent and grants as registry operations (the board,
  ``POST /v/oauth.*``, ``agent-task admin oauth ...``).

The scopes and the token checks are modules beside :mod:`taskcore.auth` (which uses them
to authenticate an access token), not in this package, which sits above the service.
"""
