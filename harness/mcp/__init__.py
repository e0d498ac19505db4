"""MCP servers as tool sources: the SDK's sessions bridged into the synchronous harness.

:mod:`harness.mcp.bridge` runs the SDK on the process's one event loop; :mod:`harness.mcp.client`
connects, lists and calls over it.
"""

# The codes of the failures a run may stop on before its first model call (resumable: the
# server may come back, the credential may be set), importable without the SDK.
SERVER_UNAVAILABLE = "mcp_server_unavailable"
CREDENTIAL_MISSING = "credential_missing"
