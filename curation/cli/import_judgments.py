"""``golden judging import``: labels from earlier campaigns (TREC qrels, or another tool's judgment
file with ``--format``: Quepid CSV, RRE ratings, a learning-to-rank judgment list) as judgments, or a
machine judge's labels (``--machine``: TREC qrels or JSONL, stored apart from human judgments)."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, main, on_conflict_option, project_option, store_session


@main.command("import-judgments")
@click.argument("file", type=click.Path(exists=True, allow_dash=True, dir_okay=False))
@click.option("--judge", required=True, metavar="NAME", help="The user the labels are recorded for.")
@project_option
@click.option("--format", "fmt", type=click.Choice(["trec", "quepid", "rre", "ltr"]), default="trec",
              show_default=True,
              help="FILE's format: TREC qrels, Quepid's judgements CSV, RRE's ratings JSON, or a learning-to-rank "
                   "judgment list (grade qid:N # docid). Queries are matched by id or text; rows that match none "
                   "are listed with their line.")
@click.option("--group", default=None, metavar="G",
              help="Import only lines whose second column is G (multi-assessor files such as qrels.123), or, "
                   "with --format quepid, the judgements of rater G (a Quepid book's column).")
@click.option("--clip", is_flag=True, help="Map grades outside the project's scale to its ends instead of skipping.")
@click.option("--create-judge", is_flag=True, help="Add NAME as a judge without a login when there is no such user.")
@click.option("--allow-empty", is_flag=True,
              help="Accept a FILE without any judgment (import nothing) instead of refusing it as `FILE: no records`.")
@click.option("--machine", is_flag=True,
              help="NAME is a machine judge (a model): its labels are stored apart and never count as a "
                   "person's (agreement, final labels, exports) unless a command asks for them by name.")
@click.option("--model", default=None, metavar="M", help="With --machine: the model, for lines that do not name one.")
@click.option("--prompt-version", default=None, metavar="V",
              help="With --machine: the prompt version, for lines that do not name one.")
@on_conflict_option
@db_option
@domain_errors
def import_judgments_cmd(file, judge, project_name, fmt, group, clip, create_judge, allow_empty, machine, model,
                         prompt_version, on_conflict, db_url):
    """Load TREC qrels (qid iter docid grade), or with --format a Quepid CSV, an RRE ratings file or a
    learning-to-rank judgment list, as judgments by NAME (source "import"); pairs that are not in the
    pool are reported and skipped, and so are rows whose query matches none of the project's (by id
    or text), each listed with its file:line. Running it again adds nothing.

    \b
    Example:
      golden judging import qrels.trec2019.txt --judge nist --project news
      golden judging import qrels.123 --group 1 --judge assessor1 --create-judge --clip
      golden judging import llm.jsonl --judge llm --machine --model m-large --prompt-version v3
      golden judging import book_7_export.csv --format quepid --group alice@example.com --judge alice
      golden judging import ratings.json --format rre --judge rre-team --create-judge
      golden judging import judgments.txt --format ltr --judge ltr --create-judge

    \b
    With --machine, FILE is TREC qrels or JSONL (.jsonl), one label a line (or a --format file):
      {"qid", "docid", "grade", "probability": {"0": .1, "1": .9} or "confidence",
       "rationale", "sample": 0, "model", "prompt_version"}
    """
    if machine:
        if group is not None or create_judge:
            raise click.UsageError("--group and --create-judge are for human judges; a machine judge is "
                                   "created by its first --machine import")
        from curation.machine.labels import import_machine_labels

        with store_session(db_url) as s:
            report = import_machine_labels(s, file, machine=judge, project=project_name, model=model,
                                           prompt_version=prompt_version, clip=clip, allow_empty=allow_empty,
                                           on_conflict=on_conflict, fmt=fmt)
        click.echo(report.summary())
        return
    if model is not None or prompt_version is not None:
        raise click.UsageError("--model and --prompt-version describe a machine judge: add --machine")
    from curation.judge.importing import import_judgments
    from curation.machine.labels import get_machine

    with store_session(db_url) as s:
        if get_machine(s, judge) is not None:
            raise click.ClickException(f"judge: {judge!r} is a machine judge; its labels are imported with --machine "
                                       "(a person needs a name of their own)")
        if fmt == "trec":
            report = import_judgments(s, file, judge=judge, project=project_name, group=group, clip=clip,
                                      create_judge=create_judge, allow_empty=allow_empty, on_conflict=on_conflict)
        else:
            from curation.judge.importing import import_foreign

            report = import_foreign(s, file, fmt=fmt, judge=judge, project=project_name, group=group, clip=clip,
                                    create_judge=create_judge, allow_empty=allow_empty, on_conflict=on_conflict)
    click.echo(report.summary())
