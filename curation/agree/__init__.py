"""Agreement between judges on the overlap set, final labels and adjudication.

- :mod:`curation.agree.settings`: the agreement report's defaults (thresholds, resamples, the cut);
- :mod:`curation.agree.measures`: percent agreement, Cohen's kappa, Krippendorff's alpha, intervals;
- :mod:`curation.agree.agreement`: the agreement report (verdict, strata, drift, timing), built once
  for ``golden labels agreement`` and the ``/lead`` dashboard;
- :mod:`curation.agree.labels`: label records, each judge's latest label, the final labels;
- :mod:`curation.agree.adjudication`: the disagreement queue and the lead's decisions;
- :mod:`curation.agree.release`: releasing the held-back pool against a measured agreement.
"""
