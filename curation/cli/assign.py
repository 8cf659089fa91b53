"""``golden judging assign`` and ``golden judging release``: hand the pool out to judges."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, main, project_option, seed_option, store_session


def _assign_decisive(session, project, names, machine, **options):
    """``assign_decisive`` guided by the project's machine judge (``machine`` sets it first; "none"
    clears it: the blind order). Returns the report and the guiding machine's name (or None)."""
    from curation.evaluate.decisive import assign_decisive
    from curation.machine.guide import guide_machine, project_figures, set_guide_machine

    if machine is not None:
        set_guide_machine(session, project, None if machine == "none" else machine)
    guide = guide_machine(session, project)
    figures = None if guide is None else project_figures(session, project, guide)
    return assign_decisive(session, project, names, machine_figures=figures, **options), guide


@main.command()
@click.option("--judges", required=True, help="Comma-separated judge names, e.g. alice,bob.")
@click.option("--overlap", type=click.IntRange(min=0), default=100, show_default=True,
              help="Pairs every listed judge labels first (calibration and agreement); 0 for none.")
@click.option("--judges-per-pair", "judges_per_pair", type=click.IntRange(min=2), default=None, metavar="K",
              help="K judges label each overlap pair (and each pair of --share) instead of every listed judge.")
@click.option("--share", type=click.FloatRange(0, 1), default=0.0, show_default=True,
              help="With --judges-per-pair: share of the main pool (drawn seeded) that K judges label too.")
@project_option
@click.option("--hold/--no-hold", default=None,
              help="Hold the main pairs back until a lead runs `golden judging release` "
                   "(default: hold when there is an overlap set).")
@click.option("--machine", "machine", metavar="NAME", default=None,
              help="A machine judge whose confident labels are accepted: people get only the pairs below "
                   "--accept-above (plus the overlap set and an audit share). With --order decisive, it also "
                   "guides the order (its calibrated probabilities choose the pairs; judges see nothing of it); "
                   "the choice is kept for the project (--machine none: back to the blind order).")
@click.option("--accept-above", type=click.FloatRange(0, 1), default=None, metavar="P",
              help="With --machine: accept the machine's label where its confidence is at least P.")
@click.option("--audit", type=click.FloatRange(0, 1), default=0.05, show_default=True,
              help="With --machine: share of the accepted pairs still given to people, drawn at random (seeded).")
@click.option("--order", type=click.Choice(["default", "decisive"]), default="default", show_default=True,
              help="decisive: judge first the pairs that can change the compared differences (needs --compare); "
                   "run again after a batch of judgments to re-prioritise the open pairs.")
@click.option("--compare", "compare", multiple=True, metavar="A,B",
              help="With --order decisive: is run B higher than run A? Repeatable.")
@click.option("--metric", default="ndcg@10", show_default=True, help="With --order decisive: ndcg@k or ap[@k].")
@click.option("--tie", type=float, default=0.0, show_default=True,
              help="With --order decisive: also settle as 'no difference larger than TIE' (0: off).")
@seed_option
@db_option
@domain_errors
def assign_cmd(judges, overlap, judges_per_pair, share, project_name, hold, machine, accept_above, audit, order,
               compare, metric, tie, seed,
           db_url):
    """Assign the project's unassigned pairs to judges: an overlap set every judge labels first,
    drawn across queries and strata, then the rest split evenly, a query's pairs with one judge.
    Run it again after `golden project extend` to hand out only the new pairs.

    With --order decisive, each judge's main pairs come in blocks of a query's most decisive
    pairs (the most unsettled weight first; shuffled within a block, nothing reveals a rank or a
    system); `golden decisive settle` says when each comparison is settled.

    \b
    With --judges-per-pair K, each overlap pair goes to K of the judges (balanced), and --share
    gives K judges to that share of the main pool too; `golden export create --policy` then says how
    the judges' labels become one (majority, median, dawid_skene, mace).

    \b
    Example:
      golden judging assign --project news --judges alice,bob,carol --overlap 100 --seed 7
      golden judging assign --project news --judges a,b,c,d,e --overlap 200 --judges-per-pair 3 --share 0.1
      golden judging assign --project news --judges alice,bob --machine llm --accept-above 0.9 --audit 0.05
      golden judging assign --project news --judges alice,bob --order decisive --compare bm25,dense --metric ndcg@10
      golden judging assign --project news --judges alice,bob --order decisive --compare bm25,dense --machine llm
    """
    from curation.judge.assignment import assign as do_assign
    from curation.store.projects import get_project

    if accept_above is not None and machine in (None, "none"):
        raise click.UsageError("--machine and --accept-above go together")
    if machine is not None and accept_above is None and order != "decisive":
        raise click.UsageError("--machine and --accept-above go together (or --machine with --order decisive, "
                               "to guide the order)")
    names = [n.strip() for n in judges.split(",") if n.strip()]
    if order == "decisive" and not compare:
        raise click.UsageError("--order decisive needs at least one --compare A,B")
    if order != "decisive" and compare:
        raise click.UsageError("--compare goes with --order decisive")
    if share and judges_per_pair is None:
        raise click.UsageError("--share goes with --judges-per-pair K (how many judges label the shared pairs)")
    esc = None
    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        if accept_above is not None:
            from curation.machine.escalation import escalation

            esc = escalation(s, proj, machine, accept_above=accept_above, audit=audit, seed=seed)
        options = dict(overlap=overlap, seed=seed, hold=hold, withhold=esc.accepted if esc else (),
                       judges_per_pair=judges_per_pair, share=share)
        guide = None
        if order == "decisive":
            rep, guide = _assign_decisive(s, proj, names, machine, compare=compare, metric=metric, tie=tie, **options)
        else:
            rep = do_assign(s, proj, names, **options)
    again = (" (assigned before; its pairs are not added again)"
             if rep.overlap_pairs and not rep.new_overlap_rows else "")
    click.echo(
        f"project {proj.name}: overlap set of {rep.overlap_pairs} pairs over {rep.overlap_queries} queries "
        f"and {rep.overlap_strata} strata{again}; {rep.new_main_pairs} new main pairs"
    )
    if rep.note:
        click.echo(f"note: {rep.note}")
    if rep.judges_per_pair is not None:
        click.echo(f"{rep.judges_per_pair} judges per overlap pair; shared main pairs: {rep.shared_main_pairs}")
    click.echo("added to each judge's queue:")
    click.echo(f"{'judge':<16} {'overlap':>7} {'main':>6} {'queries':>7}")
    for name, c in rep.per_judge.items():
        click.echo(f"{name:<16} {c['overlap']:>7} {c['main']:>6} {c['queries']:>7}")
    if esc is not None:
        click.echo(esc.summary())
        click.echo(f"{rep.withheld_pairs} new pairs withheld from people; export them with "
                   f"golden export create --fill-unjudged machine:{machine}")
    if order == "decisive":
        how = f", guided by machine judge {guide}" if guide else ""
        click.echo(f"main pairs queued in the decisive order for {', '.join(compare)} ({metric}){how}; "
                   "see `golden decisive settle --project NAME`")
    if rep.held:
        click.echo("main pairs are held back until a lead reviews agreement: golden judging release --lead NAME")


@main.command()
@click.option("--lead", "lead_name", required=True, help="The lead releasing the work (role lead or admin).")
@click.option("--agreement", type=float, default=None,
              help="The agreement you reviewed (percent agreement as `golden labels agreement` reads it); it must "
                   "match the one measured now on the overlap set, which is what is recorded.")
@click.option("--force", is_flag=True, help="Release although the verdict is not usable (needs --reason).")
@click.option("--reason", default=None, help="Why you release anyway (with --force); recorded with the release.")
@project_option
@db_option
@domain_errors
def release_cmd(lead_name, agreement, force, reason, project_name, db_url):
    """Release the held-back main pairs to their judges, recording who did it and at what agreement.

    The agreement is measured on the overlap set (as `golden labels agreement` reports it). The release
    goes ahead when the verdict is usable; otherwise (no labels yet, too few shared pairs, a
    marginal or poor agreement) it is refused unless --force with a --reason, which is recorded.

    \b
    Example:
      golden judging release --project news --lead lena
      golden judging release --project news --lead lena --force --reason "pilot: judges trained together"
    """
    from curation.agree.release import review_and_release
    from curation.store.projects import get_project
    from curation.store.users import require_user

    if force and not (reason or "").strip():
        raise click.UsageError("--force needs --reason: say why you release without a usable agreement")
    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        rec = review_and_release(s, proj, require_user(s, lead_name), force=force, reason=reason, claimed=agreement)
    at = "" if rec.agreement is None else f" at agreement {rec.agreement:.3f}"
    why = f" (forced: {rec.reason})" if rec.reason else ""
    click.echo(f"project {rec.project}: {rec.main_pairs} main pairs released by {rec.lead}{at}{why}")
