"""``python -m cwm COMMAND ...``: dispatches to :func:`cwm.cli.main`."""
import sys

from cwm import cli

sys.exit(cli.main())
