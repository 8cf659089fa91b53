"""``golden export``, ``golden verify``, ``golden split`` and ``golden seed-judgments``: versioned,
immutable qrels with a manifest, the held-out split, and seed judgments from tickets and clicks."""

from __future__ import annotations

import getpass
import sys

import click

from curation.cli.base import db_option, domain_errors, main, store_session

POLICY_CHOICES = ["adjudicated", "majority", "lead"]


def _project(s, name):
    from curation.store.projects import get_project

    return get_project(s, name)


def _whoami() -> str | None:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no login name in some containers
        return None


@main.command("export")
@click.option("--version", "version", required=True, metavar="NAME", help="Version name, e.g. v5 (a folder of that name is written).")
@click.option("--project", "project_name", metavar="NAME", default=None, help="Project (default: the only one).")
@click.option("--policy", type=click.Choice(POLICY_CHOICES), default="adjudicated", show_default=True,
              help="How a pair's final label is decided when judges disagree (see curation/agree/labels.py).")
@click.option("--allow-incomplete", is_flag=True,
              help="Export even with unjudged pooled pairs or unresolved disagreements (the manifest counts them).")
@click.option("--frozen", is_flag=True, help="Write an already exported version as frozen, whatever the store holds now.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False), help="Folder to write VERSION/ into.")
@click.option("--by", "created_by", metavar="NAME", default=None, help="Who exports (default: your login name).")
@db_option
@domain_errors
def export_cmd(version, project_name, policy, allow_incomplete, frozen, out_dir, created_by, db_url):
    """Export the golden set as an immutable version: OUT/VERSION/{qrels.txt, qrels.jsonl,
    queries.jsonl, manifest.json, CHANGES.md}.

    Exporting the same version again from the same state rewrites the same bytes; from a changed
    state it is refused (the version is frozen): export the new state as the next version.

    \b
    Example:
      golden export --version v5 --project news --policy adjudicated --out exports
      golden verify exports/v5
    """
    from curation.export.versions import export_version, write_frozen

    with store_session(db_url) as s:
        proj = _project(s, project_name)
        if frozen:
            res = write_frozen(s, proj, version, out_dir=out_dir)
        else:
            res = export_version(s, proj, version, policy=policy, out_dir=out_dir,
                                 allow_incomplete=allow_incomplete, created_by=created_by or _whoami(),
                                 progress=sys.stderr.isatty())
    m = res.manifest
    c = m["counts"]
    how = "new version" if res.new else "frozen version written again"
    parent = f", parent {m['parent']}" if m.get("parent") else ", no parent"
    click.echo(f"{res.version} of project {m['project']} -> {res.path} ({how}{parent}; created {m['created_at']})")
    split = m.get("split")
    split_txt = (f" ({split['counts']['tune']} tune, {split['counts']['holdout']} holdout)" if split else " (no split)")
    grades = ", ".join(f"{g}: {n}" for g, n in c["grades"].items())
    click.echo(f"  {c['queries']} queries{split_txt}; {c['pairs']} judged pairs (grades {grades})")
    click.echo("  sources: " + ", ".join(f"{k} {v}" for k, v in c["sources"].items() if v) + f"; policy {m['policy']}")
    inc = m["incomplete"]
    if inc["unjudged_pooled_pairs"] or inc["unresolved_disagreements"]:
        click.echo(f"  INCOMPLETE: {inc['unjudged_pooled_pairs']} pooled pairs unjudged, "
                   f"{inc['unresolved_disagreements']} disagreements unresolved (left out of qrels.txt)")
    for name, info in m["files"].items():
        click.echo(f"  {name:<14} {info['bytes']:>10} bytes  sha256 {info['sha256'][:16]}")


@main.command("verify")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@domain_errors
def verify_cmd(folder):
    """Re-check an exported version folder: checksums and sizes against its manifest, the qrels'
    format (qid 0 docid grade, sorted, integer grades) and the manifest's counts. Exit 1 on any problem.

    \b
    Example:
      golden verify exports/v5
    """
    from curation.export.verify import verify

    rep = verify(folder)
    if not rep.ok:
        for p in rep.problems:
            click.echo(f"FAIL {p}", err=True)
        raise click.ClickException(f"{folder}: {len(rep.problems)} problem(s); re-export with `golden export --version "
                                   f"{rep.version or 'NAME'} --frozen --out DIR` to restore the frozen files")
    click.echo(f"{folder}: OK, version {rep.version}; {len(rep.checked)} files match the manifest ({', '.join(rep.checked)})")


@main.command("split")
@click.option("--project", "project_name", metavar="NAME", default=None, help="Project (default: the only one).")
@click.option("--holdout", type=float, default=None,
              help="Share of each stratum held out, e.g. 0.35 (first run only; fixed afterwards).")
@click.option("--seed", type=int, default=None, help="Seed of the split (first run only; default 0).")
@db_option
@domain_errors
def split_cmd(project_name, holdout, seed, db_url):
    """Assign each query once to `tune` or `holdout`, stratified; a query's split never changes.
    Run it again (without options) to assign queries that arrived since; `golden export` does too.

    \b
    Example:
      golden split --project news --holdout 0.35 --seed 7
      golden split --project news          # later: assigns only the new queries
    """
    from curation.export.split import split_project

    with store_session(db_url) as s:
        proj = _project(s, project_name)
        rep = split_project(s, proj, holdout=holdout, seed=seed)
    new = len(rep.assigned)
    new_h = sum(1 for v in rep.assigned.values() if v == "holdout")
    click.echo(f"project {rep.project}: holdout {rep.holdout}, seed {rep.seed}; assigned {new} new queries "
               f"({new - new_h} tune, {new_h} holdout)")
    width = max([len("stratum"), len("total")] + [len(stratum or "(none)") for stratum in rep.totals])
    click.echo(f"{'stratum':<{width}} {'tune':>6} {'holdout':>8} {'share':>7}")
    for stratum, c in sorted(rep.totals.items()):
        n = c["tune"] + c["holdout"]
        click.echo(f"{stratum or '(none)':<{width}} {c['tune']:>6} {c['holdout']:>8} {c['holdout'] / n:>7.1%}")
    t = rep.counts
    click.echo(f"{'total':<{width}} {t['tune']:>6} {t['holdout']:>8} "
               f"{t['holdout'] / max(1, t['tune'] + t['holdout']):>7.1%}")


@main.command("seed-judgments")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--source", type=click.Choice(["ticket", "click"]), required=True,
              help="ticket: a resolved ticket linked the document (default grade: the top grade); "
                   "click: a click (a weak positive, default grade 1).")
@click.option("--project", "project_name", metavar="NAME", default=None, help="Project (default: the only one).")
@click.option("--add-to-pool", is_flag=True, help="Add the pairs to the judging pool, so judges confirm or reject them blind.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the pool order the new pairs take.")
@db_option
@domain_errors
def seed_judgments_cmd(file, source, project_name, add_to_pool, seed, db_url):
    """Import query-document pairs known from support tickets or clicks as seed judgments, kept
    apart from human judgments. FILE: JSONL ({"qid", "docid", "grade"?}) or CSV/TSV/text (qid docid [grade]).

    \b
    Example:
      golden seed-judgments tickets.jsonl --source ticket --project news --add-to-pool
      golden seed-judgments clicks.tsv --source click
    """
    from curation.pool.seeds import import_seeds

    with store_session(db_url) as s:
        proj = _project(s, project_name)
        rep = import_seeds(s, proj, file, source=source, add_to_pool=add_to_pool, seed=seed)
    click.echo(f"{file}: {rep.lines} lines, {rep.distinct} distinct pairs -> {rep.added} new {source} seed judgments"
               + (f" ({rep.already} stored before)" if rep.already else ""))
    if add_to_pool:
        click.echo(f"pool: {rep.pooled_new} pairs added, {rep.pooled_marked} pooled pairs marked as seeded")
        if rep.unknown_queries:
            click.echo(f"  not pooled: {len(rep.unknown_queries)} qids not in the project "
                       f"(e.g. {', '.join(rep.unknown_queries[:5])})")
        if rep.unknown_documents:
            click.echo(f"  not pooled: {len(rep.unknown_documents)} pairs whose document is not in the project's "
                       f"corpus snapshot (e.g. {', '.join(rep.unknown_documents[:3])})")
