"""MCP servers as tool sources: the SDK's sessions bridged into the synchronous harness.

:mod:`harness.mcp.bridge` runs the SDK on the process's one event loop; :mod:`harness.mcp.client`
connects, lists and calls over it.
"""
