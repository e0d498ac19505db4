"""``python -m cli``: the ``hango`` command, from a checkout without the installed script."""

from cli.main import main

main()
