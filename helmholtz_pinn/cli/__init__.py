"""The command line: ``helmholtz-pinn simulate | invert | baseline | convert``.

``main(argv)`` parses (:mod:`helmholtz_pinn.cli.parser`) and runs one command
(:mod:`helmholtz_pinn.cli.commands`); ``python -m helmholtz_pinn.cli`` is the same.
"""

from helmholtz_pinn.cli.commands import main

__all__ = ["main"]
