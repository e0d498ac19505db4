"""The ``hango`` command: an HTTP client of the public API (``client``) and its commands (``main``).

It talks to a running server only, so it imports neither Django nor the harness.
"""
