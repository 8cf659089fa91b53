"""Machine judges (a model prompted with the guidelines), measured against the human labels.

Modules: ``labels`` (importing a machine judge's labels, reading them back, its label per pair),
``calibrate`` (the calibration report of ``golden labels calibrate`` and the lead's "Machine judges" panel,
built by one function), ``bias`` (the bias checks), ``ranking`` (qrels from human, machine or
filled labels; the system ranking under each), ``escalation`` (which pairs go to people when the
machine's confident labels are accepted), ``prompt`` (the prompt golden sends, its version, the strict
parser of an answer), ``runner`` (``golden machine run``: the wire to an OpenAI-compatible endpoint),
``runs`` (runs, failures, stale labels, the runs' table), ``family`` (model families, for the
circularity warning).

A machine judge is never a :class:`~curation.store.models.User` and its labels never a
:class:`~curation.store.models.Judgment`: human agreement, final labels and exports cannot see them
unless a command asks by name (``--fill-unjudged machine:NAME``, ``--qrels-from machine:NAME``).
"""
