"""``golden decisive simulate``: replay judging with a qrels file as the judges, to see what an order saves."""

from __future__ import annotations

import sys

import click

from curation.cli.base import FiniteFloat, domain_errors, echo_json, json_option, main, on_conflict_option, seed_option


def parse_compare(values, run_names):
    """``--compare A,B`` (repeatable) or ``--compare all`` -> list of (a, b) run indices."""
    if not values or any(v.strip().lower() == "all" for v in values):
        return [(a, b) for a in range(len(run_names)) for b in range(a + 1, len(run_names))]
    out = []
    for v in values:
        parts = [p.strip() for p in v.split(",")]
        if len(parts) != 2 or not all(parts):
            raise click.BadParameter(f"{v!r}: write two run names, e.g. --compare bm25,dense", param_hint="--compare")
        if parts[0] == parts[1]:
            raise click.BadParameter(f"{v!r}: a run compared with itself", param_hint="--compare")
        for p in parts:
            if p not in run_names:
                raise click.BadParameter(f"{v!r}: no run named {p!r} (runs: {', '.join(run_names)})",
                                         param_hint="--compare")
        out.append((run_names.index(parts[0]), run_names.index(parts[1])))
    return out


def _pct(x) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _machine_guide(pm, truth, machine_path, machine_from_qrels, agreement, lean, random_machine, seed):
    """The machine judge guiding the replay, as ``simulate``'s keyword arguments, and a note saying
    which (``{}, None`` without one)."""
    guide, guide_note = {}, None
    G = max(1, int(truth.max()))
    if machine_from_qrels:
        import numpy as np

        from curation.evaluate.simulate import machine_from_qrels as build

        mg = build(truth, agreement, lean=lean, max_grade=G, seed=seed, random=random_machine)
        guide = dict(machine=(mg >= 1).astype(float), machine_top=(mg >= G).astype(float),
                     machine_key=mg.astype(np.int64))
        guide_note = ("a random machine (the qrels' grades shuffled)" if random_machine else
                      f"a machine from the qrels at {100 * agreement:.0f}% agreement, lean {lean:+.2f}") + \
            f", seed {seed}: {100 * float((mg == truth).mean()):.1f}% exact agreement with the qrels"
    elif machine_path:
        from curation.formats.machine_labels import read_machine_labels
        from curation.machine.guide import pair_figures, rows_from_file

        rows = rows_from_file(read_machine_labels(machine_path))
        units = [(pm.qids[q], d) for q, d in zip(pm.pair_query.tolist(), pm.docids)]
        rel, top, key = pair_figures(rows, units, G)
        guide = dict(machine=rel, machine_top=top, machine_key=key)
        labelled = int(sum(k >= 0 for k in key.tolist()))
        guide_note = f"machine labels {machine_path}: {labelled} of {pm.n_pairs} pool pairs labelled"
    return guide, guide_note


@main.command("simulate-judging")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True, dir_okay=False))
@click.option("--qrels", "qrels_path", required=True, type=click.Path(exists=True, allow_dash=True, dir_okay=False),
              help="TREC qrels: the judges' labels (a pair it lacks is not relevant).")
@click.option("--depth", type=click.IntRange(min=1), default=20, show_default=True, help="Pool depth of every run.")
@click.option("--order", type=click.Choice(["decisive", "shuffled", "depth"]), default="decisive", show_default=True,
              help="Judging order to replay.")
@click.option("--compare", "compare", multiple=True, metavar="A,B",
              help="Is B higher than A? Repeat for several; 'all' (the default) compares every pair of runs.")
@click.option("--metric", default="ndcg@10", show_default=True, help="ndcg@k or ap[@k].")
@click.option("--pool", "mode", type=click.Choice(["each", "all"]), default="each", show_default=True,
              help="each: every comparison judges its own two runs' pool; all: one pool of every run, one order.")
@click.option("--step", type=FiniteFloat(), default=0.02, show_default=True,
              help="Share of the pool judged between two checks of the settlement.")
@click.option("--tie", type=FiniteFloat(), default=0.0, show_default=True,
              help="Also settle as 'no difference larger than TIE' (0: off).")
@click.option("--estimate/--no-estimate", default=False,
              help="Also record when the estimate (not a guarantee) is 95%% sure.")
@click.option("--machine", "machine_path", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A machine judge's labels (JSONL or TREC qrels, as `golden judging import --machine` reads) guiding "
                   "the decisive order and the estimate.")
@click.option("--machine-from-qrels", is_flag=True,
              help="Guide the decisive order with a machine built from the qrels: --agreement, --lean, --seed.")
@click.option("--agreement", type=click.FloatRange(0, 1), default=0.8, show_default=True,
              help="With --machine-from-qrels: the share of pairs whose grade the machine keeps.")
@click.option("--lean", type=click.FloatRange(-0.5, 0.5), default=0.2, show_default=True,
              help="With --machine-from-qrels: a changed grade goes up with probability 0.5 + LEAN "
                   "(the machine more lenient than the humans).")
@click.option("--random-machine", is_flag=True,
              help="With --machine-from-qrels: a machine that says nothing (the qrels' grades shuffled).")
@seed_option
@json_option
@on_conflict_option
@domain_errors
def simulate_judging_cmd(runs, qrels_path, depth, order, compare, metric, mode, step, tie, estimate, machine_path,
                         machine_from_qrels, agreement, lean, random_machine, seed, as_json, on_conflict):
    """Replay judging the pool of RUNS in an order, the qrels answering as judges, and report for
    each comparison the share of the pool judged when it was settled with the guarantee (no
    labelling of the pairs left can change the verdict), and whether the fully judged pool agrees
    (it always must). A team can see the savings of the decisive order on its own past data.

    \b
    With a machine judge (--machine FILE, or --machine-from-qrels), the decisive order is guided
    by its calibrated probabilities (the settlement still reads only the qrels' labels).

    \b
    Example:
      golden decisive simulate runs/*.trec --qrels qrels.txt --depth 20 --order decisive --compare bm25,dense
      golden decisive simulate runs/*.trec --qrels qrels.txt --order shuffled --compare all --json
      golden decisive simulate runs/*.trec --qrels qrels.txt --machine-from-qrels --agreement 0.8 --lean 0.2 --seed 1
      golden decisive simulate runs/*.trec --qrels qrels.txt --machine llm-labels.jsonl
    """
    from curation.evaluate.simulate import pool_from_runs, simulate
    from curation.formats.qrels import read_qrels
    from curation.formats.runs import read_runs

    if not 0 < step <= 1:
        raise click.BadParameter("a share of the pool in (0, 1]", param_hint="--step")
    if tie < 0:
        raise click.BadParameter("the tie margin cannot be negative", param_hint="--tie")
    loaded = read_runs(list(runs), depth=depth)
    for run in loaded:
        if run.summary():
            click.echo(run.summary(), err=True)
    names = [r.name for r in loaded]
    if len(set(names)) != len(names):
        raise click.ClickException("two runs have the same name; rename one (its tag, or the file name)")
    if len(loaded) < 2:
        raise click.UsageError("give at least two runs to compare")
    comps = parse_compare(compare, names)
    from curation.formats.conflicts import Dedup

    dedup = Dedup(qrels_path, policy=on_conflict, what="pair")
    qrels = read_qrels(qrels_path, on_conflict=on_conflict, dedup=dedup)
    if dedup.summary():
        click.echo(dedup.summary(), err=True)
    pm, truth = pool_from_runs({r.name: r.rankings for r in loaded}, qrels, depth)
    if machine_path and machine_from_qrels:
        raise click.UsageError("give --machine FILE or --machine-from-qrels, not both")
    if random_machine and not machine_from_qrels:
        raise click.UsageError("--random-machine goes with --machine-from-qrels")
    if (machine_path or machine_from_qrels) and order != "decisive":
        raise click.UsageError("a machine judge guides --order decisive only")
    guide, guide_note = _machine_guide(pm, truth, machine_path, machine_from_qrels, agreement, lean,
                                       random_machine, seed)
    if guide_note:
        click.echo(f"guided by {guide_note}", err=True)
    bar = None
    if sys.stderr.isatty() and not as_json:
        from tqdm import tqdm

        bar = tqdm(total=100, desc=f"replaying ({order})", unit="%", file=sys.stderr)
    last = [0]

    def progress(share):
        if bar is not None:
            now = int(100 * share)
            bar.update(max(0, now - last[0]))
            last[0] = max(last[0], now)

    try:
        res = simulate(pm, truth, comps, metric, order=order, mode=mode, step=step, tie=tie, seed=seed,
                       estimate=estimate, progress=progress, **guide)
    finally:
        if bar is not None:
            bar.close()
    if as_json:
        echo_json({**res.as_dict(), "machine": guide_note})
        return
    _echo_text(res, depth=depth, order=order, mode=mode, estimate=estimate, guide_note=guide_note)


def _echo_text(res, *, depth, order, mode, estimate, guide_note) -> None:
    """The replay's result as text: a line per comparison, then the summary."""
    s = res.summary()
    click.echo(f"{res.metric}, {res.queries} queries, pool depth {depth}, order {order}, "
               f"{'each comparison on its own pool' if mode == 'each' else f'one pool of {res.pool_pairs} pairs'}"
               + (f", guided by {guide_note}" if guide_note else ""))
    head = f"{'A':<16} {'B':<16} {'pool':>6} {'full verdict':<26} {'settled at':>10}  verdict"
    if estimate:
        head += "  (estimate 95%)"
    click.echo(head)
    for c in res.comparisons:
        line = (f"{c.a[:16]:<16} {c.b[:16]:<16} {c.pool_pairs:>6} {c.full_verdict:<26} {_pct(c.settled_share):>10}  "
                f"{c.settled_verdict or 'open at the end'}{'  WRONG' if c.wrong else ''}")
        if estimate:
            line += f"  ({_pct(c.estimate_share)} {c.estimate_verdict or '-'}{', wrong' if c.estimate_wrong else ''})"
        click.echo(line)
    click.echo(f"significant when fully judged: {s['significant']} of {s['comparisons']} ({s['correction']}-corrected "
               f"for {s['comparisons']} comparisons; {s['significant_uncorrected']} uncorrected); settled: "
               f"{s['settled_of_significant']}; median share judged at settlement: "
               f"{_pct(s['median_share_significant'])}; wrong calls: {s['wrong_calls']}")
    if estimate:
        click.echo(f"estimate (not a guarantee) at 95%: median share {_pct(s['median_estimate_share_significant'])}; "
                   f"wrong calls {s['estimate_wrong_calls']} of {s['estimate_stopped']} early calls "
                   f"({s['comparisons']} comparisons)")
