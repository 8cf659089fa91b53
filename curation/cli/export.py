"""``golden export create``: the golden set as a versioned, immutable folder of qrels with a manifest."""

from __future__ import annotations

import sys

import click

from curation.cli.base import db_option, domain_errors, main, project_option, store_session

POLICY_CHOICES = ["adjudicated", "majority", "lead", "median", "dawid_skene", "mace"]  # curation.agree.labels.POLICIES


def _project(s, name):
    from curation.store.projects import get_project

    return get_project(s, name)


def _whoami() -> str | None:
    import getpass

    try:
        return getpass.getuser()
    except (ImportError, KeyError, OSError):  # no login name: a container's uid with no passwd entry
        return None


@main.command("export")
@click.option("--version", "version", required=True, metavar="NAME",
              help="Version name, e.g. v5 (a folder of that name is written).")
@project_option
@click.option("--policy", type=click.Choice(POLICY_CHOICES), default="adjudicated", show_default=True,
              help="How a pair's final label is decided when judges disagree (see curation/agree/labels.py): "
                   "majority, median, or a model of each judge's reliability (dawid_skene, mace).")
@click.option("--allow-incomplete", is_flag=True,
              help="Export even with unjudged pooled pairs or unresolved disagreements (the manifest counts them).")
@click.option("--fill-unjudged", "fill_unjudged", metavar="machine:NAME", default=None,
              help="Fill pooled pairs no person labelled with that machine judge's labels: flagged per pair in "
                   "qrels.jsonl (source machine) and counted in the manifest with its calibration figures.")
@click.option("--format", "formats", multiple=True, type=click.Choice(["quepid", "rre", "ltr", "hf"]),
              help="Also write the version for another tool (repeatable): quepid (quepid.csv), rre (rre.json), "
                   "ltr (ltr.txt, a RankLib/SVMrank judgment list), hf (hf/: a Hugging Face datasets folder of "
                   "Parquet shards and a dataset card). Listed with checksums in the manifest.")
@click.option("--relevance-level", type=int, default=1, show_default=True, metavar="GRADE",
              help="With --format: the lowest grade binary metrics count as relevant (trec_eval's -l), recorded "
                   "in every format that can hold it.")
@click.option("--frozen", is_flag=True,
              help="Write an already exported version as frozen, whatever the store holds now.")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="Folder to write VERSION/ into.")
@click.option("--by", "created_by", metavar="NAME", default=None, help="Who exports (default: your login name).")
@db_option
@domain_errors
def export_cmd(version, project_name, policy, allow_incomplete, fill_unjudged, formats, relevance_level, frozen,
               out_dir, created_by, db_url):
    """Export the golden set as an immutable version: OUT/VERSION/{qrels.txt, qrels.jsonl,
    queries.jsonl, manifest.json, CHANGES.md}.

    Exporting the same version again from the same state rewrites the same bytes; from a changed
    state it is refused (the version is frozen): export the new state as the next version.

    \b
    Example:
      golden export create --version v5 --project news --policy adjudicated --out exports
      golden export verify exports/v5
      golden export create --version v6 --project news --out exports --format hf --format ltr --relevance-level 2
    """
    from curation.export.versions import export_version, write_frozen

    with store_session(db_url) as s:
        proj = _project(s, project_name)
        if frozen:
            res = write_frozen(s, proj, version, out_dir=out_dir, created_by=created_by or _whoami())
        else:
            res = export_version(s, proj, version, policy=policy, out_dir=out_dir,
                                 allow_incomplete=allow_incomplete, created_by=created_by or _whoami(),
                                 progress=sys.stderr.isatty(), fill_unjudged=fill_unjudged,
                                 formats=formats, relevance_level=relevance_level)
    from curation.export.versions import result_lines

    for line in result_lines(res):
        click.echo(line)
    from curation.export.verify import stale_beside

    for stale in stale_beside(res.path):
        click.echo(f"note: {stale} was left by an interrupted export; delete it when no export is running", err=True)
