"""Paired statistics for release gates: intervals, exact tests, permutation nulls, Holm.

Conventions
-----------
- Inputs are 1-d numpy arrays of per-item values (paired differences, 0/1 outcomes) and an
  optional array of cluster labels (``groups``): several questions about one track are not
  independent, so when ``groups`` is given every resampling or variance estimate works on clusters.
- Every random procedure takes an explicit ``seed`` and uses ``numpy.random.default_rng``.
- Intervals are two-sided at level ``1 - alpha``; p-values are one-sided ("greater") unless a
  function says otherwise, because every gate asks a directional question.
- :func:`decide` is the single outcome rule: PASS when the interval's lower bound clears the
  margin, FAIL when its upper bound is below the margin, INCONCLUSIVE otherwise.

Modules, by topic (their functions are also importable from here)
-----------------------------------------------------------------
- :mod:`.core`: :class:`Interval`, :func:`decide` (the outcome rule)
- :mod:`.bootstrap`: :func:`bootstrap_means`, :func:`paired_bootstrap_ci` (percentile and BCa, cluster-aware)
- :mod:`.analytic`: :func:`paired_standard_error`, :func:`cluster_robust_se`, :func:`analytic_ci`
- :mod:`.exact`: :func:`sign_flip_test` (paired permutation test), :func:`mcnemar_exact`,
  :func:`binomial_test_greater`, :func:`clopper_pearson`
- :mod:`.permutation`: :func:`permutation_null` (chance level by label permutation), :func:`permutation_p_value`
- :mod:`.multiplicity`: :func:`holm`, :func:`benjamini_hochberg`, :func:`adjust` (family-wise / FDR control)
- :mod:`.power`: :func:`minimum_detectable_effect`, :func:`required_items`, :func:`design_effect`,
  :func:`items_to_decide`
- :mod:`.pairing`: :func:`~musiceval.stats.pairing.align_paired` (two ``ItemScores`` on the items both scored)
- :mod:`.gate_tests`: the test behind each gate of :class:`musiceval.gates.Gate`, as pure functions
  returning the finished :class:`~musiceval.records.GateResult` the gate records
- :mod:`.intervals` (intervals chosen by the data's shape), :mod:`.regression` (non-inferiority
  against a baseline), :mod:`.calibration` (coverage of the intervals)

References
----------
.. [1] Efron, B. (1987). Better bootstrap confidence intervals. JASA 82(397), 171-185 (BCa).
.. [2] Efron, B. & Tibshirani, R. (1993). An Introduction to the Bootstrap, ch. 14 (jackknife
       acceleration) and ch. 15 (permutation tests).
.. [3] Cameron, A. C. & Miller, D. L. (2015). A practitioner's guide to cluster-robust
       inference. J. Human Resources 50(2) (CR1 small-sample factor G/(G-1)).
.. [4] Field, C. A. & Welsh, A. H. (2007). Bootstrapping clustered data. JRSS-B 69(3)
       (resampling whole clusters).
.. [5] McNemar, Q. (1947). Psychometrika 12(2); exact conditional form: Fagerland, Lydersen &
       Laake (2013), BMC Med. Res. Methodol. 13:91.
.. [6] Clopper, C. J. & Pearson, E. S. (1934). Biometrika 26(4).
.. [7] Holm, S. (1979). A simple sequentially rejective multiple test procedure. Scand. J. Stat.
.. [8] Miller, E. (2024). Adding error bars to evals (clustered standard errors for LLM evals).
.. [9] Benjamini, Y. & Hochberg, Y. (1995). Controlling the false discovery rate. JRSS-B 57(1).
"""
from musiceval.stats.analytic import analytic_ci, cluster_robust_se, paired_standard_error
from musiceval.stats.bootstrap import bootstrap_means, paired_bootstrap_ci
from musiceval.stats.core import Interval, decide
from musiceval.stats.exact import binomial_test_greater, clopper_pearson, mcnemar_exact, sign_flip_test
from musiceval.stats.multiplicity import adjust, benjamini_hochberg, holm
from musiceval.stats.permutation import permutation_null, permutation_p_value
from musiceval.stats.power import design_effect, items_to_decide, minimum_detectable_effect, required_items

__all__ = ["Interval", "adjust", "analytic_ci", "benjamini_hochberg", "binomial_test_greater", "bootstrap_means",
           "clopper_pearson", "cluster_robust_se", "decide", "design_effect", "holm", "items_to_decide", "mcnemar_exact",
           "minimum_detectable_effect", "paired_bootstrap_ci", "paired_standard_error", "permutation_null",
           "permutation_p_value", "required_items", "sign_flip_test"]
