"""One small module per middleware; :mod:`harness.stack` decides their order."""
