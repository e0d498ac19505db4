"""Webhooks: a tenant's HTTPS endpoints, told when a run ends, signed per Standard Webhooks."""
