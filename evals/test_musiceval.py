"""The musiceval release gates (installed with the package: ``musiceval.evals``), run on the model(s)
the suite config declares. ``musiceval init`` writes this same file into a team's repository."""
from musiceval.evals.release_gates import *  # noqa: F401,F403
