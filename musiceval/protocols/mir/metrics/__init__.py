"""The MIR protocol's own metrics: the task scoring entry point (:mod:`.tasks`: ``score_task``, the
task families and their keys), one module per family (:mod:`.classification`, :mod:`.tagging`,
:mod:`.regression`, :mod:`.beats`, :mod:`.sequence`, :mod:`.lyrics`, :mod:`.captioning`), the
per-family loops (:mod:`.families`) and the CMI-Bench toolkit's rules by commit (:mod:`.compat`).
Metric functions that other protocols use too stay in :mod:`musiceval.metrics`."""
