"""Versioned, immutable qrels exports with their manifest, and query splits.

Modules: ``versions`` (export, frozen versions), ``gather`` (the state from the store), ``changes``
(CHANGES.md), ``manifest`` (file names, state hash, seal), ``archive`` (the zip), ``write`` (the
folder), ``verify`` (``golden export verify``), ``versions_page`` (the versions page's data), ``split``
(tune/holdout), ``version_compare`` (pooled runs compared on an exported version, for the reports
page). Nothing is re-exported here: import from the module.
"""
