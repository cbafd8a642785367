"""``python -m cwm eval`` (see :func:`cwm.model.cli.eval_main`)."""
from cwm.model.cli import add_eval_arguments as add_arguments  # noqa: F401
from cwm.model.cli import eval_main as main  # noqa: F401
