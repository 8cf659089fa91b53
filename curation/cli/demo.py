"""``golden demo``: generate a realistic data set and run the path on it."""

from __future__ import annotations

import shlex

import click

from curation.cli.base import domain_errors, main, seed_option


def demo_commands(result) -> dict[str, str]:
    """The `golden` commands that do what the demo did, with the demo's own paths."""
    from curation.demo import POOL_DEPTH, SAMPLE_FLOOR, SAMPLE_SIZE

    p = result.data.paths
    seed = result.pool.seed
    q = shlex.quote
    sample = (
        f"golden sample queries {q(str(p.log))} --query-col query --user-col user_id --stratum surface --shape "
        f"--size {SAMPLE_SIZE} --floor {SAMPLE_FLOOR} --seed {seed} --handwritten {q(str(p.handwritten))} "
        f"--out {q(str(p.queries))}"
    )
    pool = (
        f"golden pool {' '.join(q(str(r)) for r in p.runs)} --queries {q(str(p.queries))} "
        f"--depth {POOL_DEPTH} --seed {seed} --out {q(str(p.pool))}"
    )
    return {"sample": sample, "pool": pool}


@main.command("demo")
@click.option("--dir", "folder", default="golden-demo", show_default=True, type=click.Path(file_okay=False),
              help="Folder to write the demo into (new, empty, or an earlier demo folder).")
@seed_option
@click.option("--no-serve", is_flag=True, help="Stop after loading the judging store; do not serve it.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port to serve the judging app on.")
@click.option("--force", is_flag=True,
              help="Replace the folder's store even when it holds work (judgments, adjudications, versions...).")
@domain_errors
def demo_cmd(folder, seed, no_serve, port, force):
    """Generate a realistic demo data set in --dir, sample, pool, load and serve it for judging.

    The data imitate a help-centre search: a search log with a heavy head and a long tail
    over three surfaces (web, app, chat), a corpus of a few thousand chunks, three candidate
    systems of clearly different quality built from a hidden ground truth, relevance
    guidelines on a 0-2 scale and a few hand-written queries. Then it runs `golden sample queries`
    and `golden pool` on them (it prints the equivalent commands), loads the project into
    DIR/golden.db with two judges and a lead (their logins are printed), assigns the pool
    with an overlap set, and serves the judging app (granian) on 127.0.0.1:PORT.
    Same --seed, same files. A folder whose store already holds work (judgments,
    adjudications, imports, leak decisions, export versions) is refused unless --force.

    \b
    Example:
      golden demo --dir golden-demo --seed 0 --no-serve

    \f
    One function on purpose (click shows none of this): the demo's transcript, each step's command
    and result printed in the order they run.
    """
    from curation.cli.pool import pool_summary
    from curation.cli.sample import format_strata_table
    from curation.demo import POOL_DEPTH, SYSTEMS, build_demo, refuse_to_overwrite_work

    if not force:
        refuse_to_overwrite_work(folder)
    result = build_demo(folder, seed=seed)
    data, paths = result.data, result.data.paths
    echo = click.echo

    def rel(p):
        return p.relative_to(paths.folder).as_posix()

    echo(f"Generated a demo data set in {paths.folder}/ (seed {seed}):")
    echo(f"  {rel(paths.log):<18} {data.log_rows:,} searches, {data.distinct_queries:,} distinct queries, "
         "surfaces web/app/chat")
    echo(f"  {rel(paths.corpus):<18} {data.corpus_docs:,} chunks, "
         f"fingerprint {result.fetched.fingerprint.sha256[:16]}...")
    echo(f"  {'runs/':<18} {', '.join(SYSTEMS)}: top 100 for each of {data.run_queries:,} queries")
    echo(f"  {rel(paths.guidelines):<18} relevance on a 0-2 scale")
    with open(paths.handwritten, encoding="utf-8") as fh:
        handwritten = sum(1 for _ in fh)
    echo(f"  {rel(paths.handwritten):<18} {handwritten} hand-written queries")
    echo(f"  {rel(paths.hidden_qrels):<18} the hidden truth the runs were built from (for simulated judges only)")
    commands = demo_commands(result)
    echo("")
    echo("Sampled the log, as:")
    echo(f"  {commands['sample']}")
    echo(format_strata_table(result.sample.strata))
    st = result.sample.stats
    pii = sum(1 for r in result.sample.rows if r["pii"])
    for warning in result.sample.warnings:
        echo(f"  note: {warning}")
    echo(f"-> {rel(paths.queries)}: {st['size']} logged + {st['handwritten']} hand-written queries "
         f"({pii} flagged as possible personal data)")
    echo("")
    echo("Pooled the runs for those queries, as:")
    echo(f"  {commands['pool']}")
    for line in pool_summary(result.pool, queries=rel(paths.queries)):
        echo(line)
    pooled_docs = len({p.docid for p in result.pool.pairs})
    echo(f"-> {rel(paths.pool)} ({len(result.pool.pairs):,} pairs, depth {POOL_DEPTH}) and {rel(paths.pool_meta)}")
    if result.fetched.missing:
        echo(f"  {len(result.fetched.missing)} pooled documents are missing from the corpus: "
             f"{', '.join(result.fetched.missing[:5])}")
    else:
        echo(f"  all {pooled_docs:,} pooled documents are in the corpus")
    from curation.demo import load_demo_store
    from curation.store.roles import is_lead

    store = load_demo_store(result, seed=seed)
    a = store.assigned
    echo("")
    echo(f"Loaded project {store.project!r} into {rel(store.path)} and assigned it, as:")
    q, db = shlex.quote, shlex.quote(str(store.path))
    echo(f"  golden admin db upgrade --db {db}")
    echo(f"  golden project create {store.project} --queries {q(str(paths.queries))} --pool {q(str(paths.pool))} "
         f"--corpus {q(str(paths.corpus))} --guidelines {q(str(paths.guidelines))} --scale 0-2 --db {db}")
    judges = [name for name, role, _ in store.logins if not is_lead(role)]
    echo(f"  golden admin user add NAME --role judge|lead --db {db}   (for {', '.join(n for n, _, _ in store.logins)})")
    echo(f"  golden judging assign --project {store.project} --judges {','.join(judges)} --overlap {a.overlap_pairs} "
         f"--seed {seed} --db {db}")
    echo(f"  overlap set: {a.overlap_pairs} pairs over {a.overlap_queries} queries, labelled by every judge first;"
         f" the other {a.new_main_pairs} pairs are split by query"
         + (", held until the lead releases them" if a.held else ""))
    if store.machine is not None:
        m = store.machine
        echo("")
        echo(f"Imported a simulated machine judge (the hidden truth with {m.imported // max(m.samples, 1):,} pairs x "
             f"{m.samples} samples, a few errors and a lean towards long documents), as:")
        echo(f"  golden judging import {q(str(paths.machine))} --judge {m.machine} --machine --db {db}")
        echo(f"  then, once people have labelled pairs: golden labels calibrate --project {store.project} --machine "
             f"{m.machine} --db {db}")
    echo("")
    echo("Log in as (the passwords are new each run):")
    for name, role, password in store.logins:
        echo(f"  {role:<6} {name:<8} password {password}")
    if no_serve:
        echo("")
        echo(f"Serve it with: golden serve --db {db}")
        return
    from curation.cli.serve import build_app, default_workers, serve_app

    echo("")
    serve_app(build_app(store.url), host="127.0.0.1", port=port, workers=default_workers(), threads=1)
