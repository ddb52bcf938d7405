"""``python -m musiceval``: the ``musiceval`` command (:func:`musiceval.cli.main`)."""
from musiceval.cli import main

raise SystemExit(main())
