"""``golden import-judgments``: labels from earlier campaigns (TREC qrels) as judgments, or a machine
judge's labels (``--machine``: TREC qrels or JSONL, stored apart from human judgments)."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, main, on_conflict_option, project_option, store_session


@main.command("import-judgments")
@click.argument("file", type=click.Path(exists=True, allow_dash=True, dir_okay=False))
@click.option("--judge", required=True, metavar="NAME", help="The user the labels are recorded for.")
@project_option
@click.option("--group", default=None, metavar="G",
              help="Import only lines whose second column is G (multi-assessor files such as qrels.123).")
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
def import_judgments_cmd(file, judge, project_name, group, clip, create_judge, allow_empty, machine, model,
                         prompt_version, on_conflict, db_url):
    """Load TREC qrels (qid iter docid grade) as judgments by NAME (source "import"); pairs that
    are not in the pool are reported and skipped. Running it again adds nothing.

    \b
    Example:
      golden import-judgments qrels.trec2019.txt --judge nist --project news
      golden import-judgments qrels.123 --group 1 --judge assessor1 --create-judge --clip
      golden import-judgments llm.jsonl --judge llm --machine --model m-large --prompt-version v3

    \b
    With --machine, FILE is TREC qrels or JSONL (.jsonl), one label a line:
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
                                           on_conflict=on_conflict)
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
        report = import_judgments(s, file, judge=judge, project=project_name, group=group, clip=clip,
                                  create_judge=create_judge, allow_empty=allow_empty, on_conflict=on_conflict)
    click.echo(report.summary())
