"""Re-export of :mod:`musiceval.cmibench_vocab` (the vocabularies moved to a low module that
both the data and the metrics packages may import)."""
from musiceval.cmibench_vocab import *  # noqa: F401,F403
from musiceval.cmibench_vocab import CLASS_VOCABULARIES, TAG_VOCABULARIES  # noqa: F401
