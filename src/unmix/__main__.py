"""``python -m unmix`` = the ``unmix`` command."""

from unmix.cli import app

app(prog_name="unmix")
