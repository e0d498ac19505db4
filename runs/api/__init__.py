"""The runs app's HTTP side: its views, their input and output shapes, and the event stream.

The top room: it calls :mod:`runs.intake` and reads what the lower rooms keep; nothing below
imports it.
"""
