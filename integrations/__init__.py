"""MCP servers and the credentials their requests carry: a tenant's resources, their API and
admin, and the listing cache of each server's tools."""
