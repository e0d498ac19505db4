"""Harness unit tests: no database, no Django (the `spans` fixture is in tests/conftest.py)."""
