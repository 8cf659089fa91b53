"""A realistic demo data set, generated from a seed, and the first steps of the path run on it.

The data imitate a help-centre search for a fictional file-storage product, "Nimbus":

* ``search_log.csv``: one row per search (``ts``, ``user_id``, ``surface``, ``query``). Query
  popularity follows a Zipf law (a heavy head and a long tail), the three surfaces (``web``,
  ``app``, ``chat``) carry different traffic and favour different topics, people type the same
  query with different case, spacing and apostrophes, and a few tail queries hold personal data.
* ``corpus.jsonl``: a few thousand chunks (``id``, ``title``, ``url``, ``text``) of help articles,
  plus release notes and blog chunks that mention the same words without answering anything.
* ``runs/*.trec``: three candidate systems (a strong hybrid, a lexical baseline, a weak small
  embedding model) that ranked the corpus for every query, built from a hidden ground truth and
  lexical (TF-IDF) similarity, so their quality clearly differs.
* ``hidden/qrels.txt``: that ground truth (grades 0-2, by qid), for the demo's simulated judges
  and for checking; a real project has none.
* ``guidelines.md`` (relevance on a 0-2 scale) and ``handwritten.txt`` (hard queries a person
  wrote).

:func:`build_demo` then samples the log (:func:`curation.sample.sampling.sample_queries`) and pools
the runs for the sampled queries (:func:`curation.pool.pooling.make_pool`).

Modules: ``content`` (the product's topics, phrases and queries, the passages' text, the hidden
grade of a pair, the guidelines), ``generator`` (the data from one seeded generator in one order,
so the same seed writes the same bytes), ``pipeline`` (the path: generate, sample, pool, load a
judging store) and ``machine`` (a simulated machine judge). Import their names from here.
"""

from curation.demo.content import (  # noqa: F401 - the package's names
    GUIDELINES,
    POOL_DEPTH,
    SAMPLE_FLOOR,
    SAMPLE_SIZE,
    SYSTEMS,
)
from curation.demo.generator import (  # noqa: F401
    MARKER,
    DemoData,
    DemoPaths,
    DemoResult,
    generate_demo_data,
    prepare_folder,
)
from curation.demo.machine import DEMO_MACHINE, MACHINE_SAMPLES, write_machine_judge  # noqa: F401
from curation.demo.pipeline import (  # noqa: F401
    DEMO_JUDGES,
    DEMO_LEAD,
    DEMO_OVERLAP,
    DEMO_PROJECT,
    DemoStore,
    build_demo,
    load_demo_store,
    refuse_to_overwrite_work,
)
