"""``golden labels adjudicate``: the queue of disagreements (or, with ``--unsure``, of unsure answers), and a
lead's final label for one."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, echo_json, json_option, main, project_option, store_session


@main.command("adjudicate")
@project_option
@click.option("--lead", "lead_name", metavar="NAME", help="The lead recording the decision (with --pair).")
@click.option("--pair", "pair_ref", metavar="QID/DOCID", help="The pair to decide, as qid/docid.")
@click.option("--grade", type=int, help="The final grade.")
@click.option("--reason", help="Why this grade (kept with the final label).")
@click.option("--guidelines-issue", is_flag=True, help="The disagreement came from the guidelines.")
@click.option("--unsure", is_flag=True,
              help="The queue of unsure answers (a judge's grade marked unsure) instead of the disagreements; "
                   "with --pair, confirm or change that grade (--reason optional).")
@json_option
@db_option
@domain_errors
def adjudicate_cmd(project_name, lead_name, pair_ref, grade, reason, guidelines_issue, unsure, as_json, db_url):
    """List the disagreements waiting for a lead (largest grade distance first), or decide one.

    \b
    Example:
      golden labels adjudicate --project news
      golden labels adjudicate --project news --lead lena --pair q12/doc7 --grade 2 \\
          --reason "answers the question in the second paragraph"
      golden labels adjudicate --project news --unsure
      golden labels adjudicate --project news --unsure --lead lena --pair q12/doc9 --grade 1
    """
    from curation.agree.adjudication import adjudicate, disagreements, pair_id_of, resolve_unsure, unsure_answers
    from curation.store.projects import get_project
    from curation.store.users import require_user

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        if pair_ref is None:
            queue = unsure_answers(s, proj) if unsure else disagreements(s, proj)
            if as_json:
                echo_json([
                    {"qid": d.qid, "docid": d.docid, "distance": d.distance,
                     "labels": {lab.judge: lab.grade for lab in d.labels},
                     "notes": {lab.judge: lab.note for lab in d.labels if lab.note}} for d in queue])
                return
            if not queue:
                click.echo("no unsure answers wait for a lead" if unsure else "no disagreements wait for a lead")
            for d in queue:
                labels = ", ".join(f"{lab.judge}={'none' if lab.grade is None else lab.grade}"
                                   f"{' (unsure)' if unsure and lab.unsure else ''}" for lab in d.labels)
                click.echo(f"{d.qid}/{d.docid}  distance {d.distance}  {labels}")
            return
        if lead_name is None or grade is None or (reason is None and not unsure):
            raise click.UsageError("deciding a pair needs --lead, --grade and --reason with --pair")
        qid, sep, docid = pair_ref.partition("/")
        if not sep:
            raise click.UsageError(f"--pair {pair_ref!r}: write it as QID/DOCID")
        pair_id = pair_id_of(s, proj, qid, docid)
        if pair_id is None:
            raise click.ClickException(f"--pair: {pair_ref} is not a pair of project {proj.name}")
        lead = require_user(s, lead_name)
        if unsure:
            resolve_unsure(s, proj, pair_id=pair_id, lead=lead, grade=grade, reason=reason)
        else:
            adjudicate(s, proj, pair_id=pair_id, lead=lead, grade=grade, reason=reason,
                       guidelines_issue=guidelines_issue)
    click.echo(f"{pair_ref}: final grade {grade} (adjudicated by {lead_name})")
