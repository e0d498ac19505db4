"""Context overrides arrive with the context inspector (see docs/architecture.md)."""
