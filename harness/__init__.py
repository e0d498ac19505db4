"""The agent harness core: provider-neutral messages, providers, tools, the middleware chain,
state and the turn loop.

It imports nothing from Django, Celery or DRF (tests/test_project.py enforces it), so it
can be unit-tested without a database and reused on its own. Django apps reach it only through
``runs/execution/worker.py`` and the context inspect service.
"""
