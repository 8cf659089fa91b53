"""``golden stats metrics | compare | power | noise | sweep | attribute``: per-query metrics and paired statistics.

One module for six commands because they share their options (qrels, metric,
relevance level, resamples) and their loading of qrels, queries and runs, defined once here.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import click

from curation.cli.base import (
    EXIT_NULL_ARM,
    FiniteFloat,
    checked_paths,
    domain_errors,
    echo_json,
    json_option,
    main,
    on_conflict_option,
    seed_option,
)
from curation.evaluate.choices import CI_METHODS, CORRECTIONS, FEW_QUERIES, NOISE_RULES, UNITS, WEIGHTINGS

# The metric registry lives with numpy (curation.evaluate.metrics): naming every choice here would
# import it for `golden --help`; an unknown metric is refused with the list.
_METRIC_HELP = "Metric, e.g. ndcg@10, recall@100, ap or mrr@10 (an unknown name is answered with the choices)."


# ---------------------------------------------------------------------------------------------
# shared options and loading


def _qrels_option(func=None, *, from_store: bool = False):
    """``--qrels``; with ``from_store``, also ``--qrels-from`` (and its ``--project``/``--db``), the
    labels of the project store instead of a file (:func:`curation.machine.ranking.qrels_from`)."""
    if func is None:
        return lambda f: _qrels_option(f, from_store=from_store)
    func = on_conflict_option(func, expose=False)  # read by _load_qrels
    if from_store:
        func = _qrels_from_options(func)
    return click.option(
        "--qrels", "qrels_path", required=not from_store, type=click.Path(exists=True, allow_dash=True),
        help="TREC qrels file, or an exported version folder (its qrels.txt, and queries.jsonl when present)."
        + (" Or --qrels-from." if from_store else ""),
    )(func)


def _qrels_from_options(func):
    """``--qrels-from human|machine:NAME|filled:NAME`` with ``--project`` and ``--db``, kept in
    ``ctx.meta`` for :func:`_load_qrels`."""
    def remember(key):
        def callback(ctx, param, value):
            ctx.meta[key] = value
            return value
        return callback

    func = click.option("--db", "qrels_db", metavar="URL", envvar="DATABASE_URL", default=None, expose_value=False,
                        callback=remember("qrels_db"), help="With --qrels-from: the project store.")(func)
    func = click.option("--project", "qrels_project", metavar="NAME", default=None, expose_value=False,
                        callback=remember("qrels_project"),
                        help="With --qrels-from: the project (default: the only one).")(func)
    return click.option(
        "--qrels-from", "qrels_from", metavar="SPEC", default=None, expose_value=False, callback=remember("qrels_from"),
        help="Labels from the project store instead of --qrels: human (final human labels), machine:NAME (a "
             "machine judge's) or filled:NAME (human where there is one, else the machine's).",
    )(func)


def _rel_level_option(func):
    return click.option(
        "--rel-level", type=int, default=1, show_default=True,
        help="Lowest grade that counts as relevant for binary metrics (trec_eval -l); nDCG uses every "
             "positive grade whatever the level.",
    )(func)


def _resamples_option(func):
    return click.option("--resamples", type=int, default=10_000, show_default=True,
                        help="Bootstrap resamples.")(func)


def _metric_callback(ctx, param, value):
    from curation.evaluate.metrics import parse_metric

    try:
        if isinstance(value, tuple):
            return tuple(parse_metric(v) for v in value)
        return parse_metric(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _load_qrels(path: str) -> tuple[dict, str | None]:
    """The qrels, and the export's queries.jsonl when ``path`` is an exported version folder. Repeated
    pairs follow ``--on-conflict``; what was dropped is said on stderr. With ``--qrels-from``, the
    qrels come from the project store."""
    from curation.formats.conflicts import Dedup
    from curation.formats.qrels import read_qrels

    meta = click.get_current_context().meta
    if meta.get("qrels_from"):
        if path:
            raise click.UsageError("give --qrels FILE or --qrels-from SPEC, not both")
        from curation.cli.base import store_session
        from curation.machine.ranking import qrels_from
        from curation.store.projects import get_project

        with store_session(meta.get("qrels_db")) as s:
            qrels = qrels_from(s, get_project(s, meta.get("qrels_project")), meta["qrels_from"])
        click.echo(f"qrels from the project store: {meta['qrels_from']} "
                   f"({sum(len(v) for v in qrels.values())} pairs, {len(qrels)} queries)", err=True)
        return qrels, None
    if not path:
        raise click.UsageError("Missing option '--qrels' (or --qrels-from SPEC)")
    p = Path(path)
    queries = None
    if p.is_dir():
        qrels_file = p / "qrels.txt"
        if not qrels_file.exists():
            raise click.ClickException(f"{p}: an export folder must contain qrels.txt (is this the right folder?)")
        queries = p / "queries.jsonl"
        p = qrels_file
    dedup = Dedup(p, policy=click.get_current_context().meta.get("on_conflict", "error"), what="pair")
    qrels = read_qrels(p, dedup=dedup)
    if dedup.summary():
        click.echo(dedup.summary(), err=True)
    return qrels, str(queries) if queries is not None and queries.exists() else None


def _load_queries(queries_path: str | None, from_export: str | None):
    from curation.formats.conflicts import Dedup
    from curation.formats.queries import iter_queries

    path = queries_path or from_export
    if not path:
        return None, None
    ctx = click.get_current_context(silent=True)
    dedup = Dedup(path, policy=ctx.meta.get("on_conflict", "error") if ctx else "error", what="qid")
    queries = {q.qid: q for q in iter_queries(path, dedup=dedup)}
    if dedup.summary():
        click.echo(dedup.summary(), err=True)
    return queries, path


def _read_runs(paths) -> list:
    """Read the runs (in parallel), with a progress bar on stderr when it is a terminal."""
    from tqdm import tqdm

    from curation.formats.runs import read_runs

    paths = list(paths)
    with tqdm(total=len(paths), desc="reading runs", unit="run", file=sys.stderr,
              disable=len(paths) < 3 or not sys.stderr.isatty()) as bar:
        runs = read_runs(paths, progress=lambda _run: bar.update())
    for run in runs:
        if run.summary():
            click.echo(run.summary(), err=True)
    return runs


def _unique_names(runs) -> None:
    seen: dict[str, int] = {}
    for r in runs:
        if r.name in seen:
            seen[r.name] += 1
            r.name = f"{r.name}#{seen[r.name]}"
        else:
            seen[r.name] = 1


def _score(run, index, spec):
    from curation.evaluate.metrics import evaluate

    return evaluate(run, index, [spec], rel_level=index.rel_level)[str(spec)]


def _no_results_line(scores_by_run) -> str | None:
    parts = [f"{name}: {len(s.no_results)}" for name, s in scores_by_run if s.no_results]
    if not parts:
        return None
    return "queries with no results score 0 (as trec_eval -c): " + ", ".join(parts)


# ---------------------------------------------------------------------------------------------
# golden stats metrics


@main.command("metrics")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True))
@_qrels_option(from_store=True)
@click.option("-m", "--metric", "metrics", multiple=True, default=("ndcg@10", "recall@100", "ap", "mrr@10"),
              show_default=True, callback=_metric_callback, help=_METRIC_HELP + " Repeat for several.")
@_rel_level_option
@click.option("--per-query", is_flag=True, help="Print one line per query and metric (qid, value, judged).")
@json_option
@domain_errors
def metrics_cmd(runs, qrels_path, metrics, rel_level, per_query, as_json):
    """Per-query metrics of one or more runs, averaged, with judged@k beside each.

    \b
    Metrics are computed as trec_eval -c computes them (ranking by score, ties by
    docid descending); a query with nothing graded >= --rel-level is left out
    of recall and AP, a query with no positive grade out of nDCG (whose gains
    do not depend on the level), each listed with its reason; a query a run has
    no result for scores 0.

    \b
    Example:
      golden stats metrics runs/bm25.trec runs/rerank.trec --qrels exports/v3 -m ndcg@10 -m recall@100
    """
    from curation.evaluate.metrics import QrelsIndex, evaluate

    qrels, _ = _load_qrels(qrels_path)
    index = QrelsIndex.build(qrels, rel_level=rel_level)
    loaded = _read_runs(runs)
    _unique_names(loaded)
    results = {r.name: evaluate(r, index, metrics, rel_level=rel_level) for r in loaded}
    if as_json:
        out = {"rel_level": rel_level, "queries": len(index.qids), "runs": {}}
        for name, per in results.items():
            out["runs"][name] = {
                m: {"mean": s.mean, "judged": s.judged_mean, "n": len(s.qids), "dropped": s.dropped,
                    "drop_reason": s.drop_reason, "no_results": s.no_results,
                    **({"per_query": s.as_dict()} if per_query else {})}
                for m, s in per.items()
            }
        echo_json(out)
        return
    if per_query:
        click.echo("run\tmetric\tqid\tvalue\tjudged")
        for name, per in results.items():
            for m, s in per.items():
                for q, v, j in zip(s.qids, s.values, s.judged):
                    click.echo(f"{name}\t{m}\t{q}\t{v:.4f}\t{j:.4f}")
        return
    width = max(12, *(len(n) for n in results))
    click.echo(f"{len(index.qids)} queries in the qrels; relevant = grade >= {rel_level}")
    header = f"{'run':<{width}}" + "".join(f"  {str(m):>14}  {'judged':>6}" for m in metrics)
    click.echo(header)
    for name, per in results.items():
        line = f"{name:<{width}}"
        for m in metrics:
            s = per[str(m)]
            line += f"  {s.mean:>14.4f}  {100 * s.judged_mean:>5.1f}%"
        click.echo(line)
    for m in metrics:
        first = next(iter(results.values()))[str(m)]
        if first.dropped:
            shown = ", ".join(first.dropped[:5]) + (", ..." if len(first.dropped) > 5 else "")
            click.echo(f"{m}: {len(first.dropped)} queries with {first.drop_reason} left out "
                       f"(mean over {len(first.qids)}): {shown}")
    line = _no_results_line([(n, next(iter(per.values()))) for n, per in results.items()])
    if line:
        click.echo(line)
    if len(index.qids) < FEW_QUERIES:
        click.echo(f"note: only {len(index.qids)} queries: means over so few are rough estimates "
                   "(golden stats compare gives their interval)")


# ---------------------------------------------------------------------------------------------
# golden stats compare


def _print_comparison(c) -> None:
    click.echo(f"{c.metric}: B = {c.name_b}  vs  A = {c.name_a}")
    extra = []
    if c.split:
        extra.append(f"split {c.split}")
    if c.cluster_col:
        extra.append(f"cluster bootstrap on {c.cluster_col} ({c.clusters} clusters)")
    click.echo(f"{c.n} queries paired; weighting: {c.weighting}; unit: {c.unit}; {c.interval_text}"
               + ("; " + "; ".join(extra) if extra else ""))
    click.echo(f"estimator: {c.estimator}")
    if c.dropped:
        reasons = ", ".join(f"{k}: {v}" for k, v in c.drop_reasons.items())
        click.echo(f"dropped from both arms: {c.dropped} queries ({reasons})")
    k = c.metric.split("@")[1] if "@" in c.metric else ""
    w = max(len(c.name_a), len(c.name_b), 10)
    click.echo("")
    click.echo(f"     {'run':<{w}}  {'mean':>8}  {'judged@' + k if k else 'judged':>9}")
    click.echo(f"  A  {c.name_a:<{w}}  {c.mean_a:>8.4f}  {100 * c.judged_a:>8.1f}%")
    click.echo(f"  B  {c.name_b:<{w}}  {c.mean_b:>8.4f}  {100 * c.judged_b:>8.1f}%")
    click.echo("")
    click.echo(f"  delta B - A      {c.delta:+.4f}   [{c.low:+.4f}, {c.high:+.4f}]")
    none = f" (none of {c.resamples} resamples)" if c.p_delta_le_0 == 0 and c.ci_method != "t" else ""
    click.echo(f"  P(delta <= 0)    {c.p_delta_le_0:.4f}{none}")
    s = c.sign
    click.echo(f"  queries          {s.better} better, {s.worse} worse, {s.tied} tied; "
               f"sign test p = {s.pvalue:.4g}")
    if c.mcnemar is not None:
        m = c.mcnemar
        click.echo(f"  McNemar (exact)  A only {m.a_only}, B only {m.b_only}; p = {m.pvalue:.4g}")
    if c.strata:
        click.echo("")
        sw = max(len(x.label) for x in c.strata)
        click.echo(f"  {'stratum':<{sw}}  {'n':>5}  {'weight':>6}  {'A':>7}  {'B':>7}  {'delta':>8}  interval")
        for x in c.strata:
            iv = "" if math.isnan(x.low) else f"[{x.low:+.4f}, {x.high:+.4f}]"
            click.echo(f"  {x.label:<{sw}}  {x.n:>5}  {x.weight:>6.3f}  {x.mean_a:>7.4f}  {x.mean_b:>7.4f}  "
                       f"{x.delta:>+8.4f}  {iv}")
    for note in c.notes:
        click.echo(f"note: {note}")
    click.echo("")
    tie = f" (declared tie ±{c.tie:g})" if c.tie else ""
    click.echo(f"verdict: {c.verdict}{tie}")


def _print_family(f) -> None:
    """The family table of ``golden stats compare`` with more than two runs."""
    first = f.rows[0].comparison
    click.echo(f"{f.metric}: {len(f.runs)} runs, " + (f"each against the baseline {f.baseline}" if f.baseline
                                                       else f"every pair ({len(f.rows)} comparisons)"))
    click.echo(f"{first.n} queries paired (first pair); weighting: {first.weighting}; {first.interval_text}")
    click.echo(f"correction for {len(f.rows)} comparison{'s' if len(f.rows) != 1 else ''}: "
               f"{f.correction_text}")
    click.echo("")
    w = max(10, *(len(n) for n in f.runs))
    click.echo(f"  {'A':<{w}}  {'B':<{w}}  {'delta B - A':>11}  {'interval':<19}  {'p':>7}  {'adjusted':>8}  verdict")
    for r in f.rows:
        c = r.comparison
        iv = "" if math.isnan(c.low) else f"[{c.low:+.4f}, {c.high:+.4f}]"
        click.echo(f"  {c.name_a:<{w}}  {c.name_b:<{w}}  {c.delta:>+11.4f}  {iv:<19}  {r.p:>7.4f}  "
                   f"{r.p_adjusted:>8.4f}  {r.verdict}")
    notes = list(dict.fromkeys(n for r in f.rows for n in r.comparison.notes))
    for note in f.notes + notes:
        click.echo(f"note: {note}")


@main.command("compare")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True))
@_qrels_option(from_store=True)
@click.option("--metric", default="ndcg@10", show_default=True, callback=_metric_callback, help=_METRIC_HELP)
@click.option("--queries", "queries_path", type=click.Path(exists=True, allow_dash=True, dir_okay=False),
              help="queries.jsonl (golden sample queries / export): strata, weights, split, cluster columns.")
@_rel_level_option
@_resamples_option
@seed_option
@click.option("--tie", type=FiniteFloat(minimum=0), default=None,
              help="Smallest difference that matters, declared before the run, e.g. 0.03.")
@click.option("--weighting", type=click.Choice(WEIGHTINGS), default="unweighted", show_default=True,
              help="How queries count in the mean: unweighted, traffic (queries.jsonl weight), "
                   "stratum (equal per stratum).")
@click.option("--split", default=None, help="Only the queries of this split, e.g. holdout.")
@click.option("--cluster-col", default=None,
              help="queries.jsonl field whose queries are resampled together, e.g. user.")
@click.option("--ci", type=click.Choice(CI_METHODS), default="auto", show_default=True,
              help="Interval: auto (the t interval at every query count, with a variance that follows the "
                   "sampling design; P(delta <= 0) from the same t), t (the same), percentile, or bca (scipy).")
@click.option("--unit", type=click.Choice(UNITS), default="query", show_default=True,
              help="Whose mean: each query (or search, with traffic weights), or each user with their queries "
                   "counting together (traffic: the sample's user_weight; unweighted: needs --cluster-col).")
@click.option("--mix", default=None, metavar="STRATUM=SHARE,...",
              help="A target mix of strata, e.g. market=us=0.7,market=de=0.3 (or us=0.7,de=0.3): each stratum "
                   "weighs its stated share, its queries weighted within it as --weighting says. A key may name "
                   "a group of strata by one dimension (surface=web), shared in proportion to their own shares.")
@click.option("--baseline", default=None, metavar="RUN",
              help="With more than two runs: compare each run against this one (its file or run name) instead "
                   "of every pair.")
@click.option("--correction", type=click.Choice(CORRECTIONS), default="holm", show_default=True,
              help="With more than two runs: holm (family-wise), bonferroni, bh (Benjamini-Hochberg, false "
                   "discovery rate, for exploratory sweeps), tukey (paired randomised Tukey HSD), or none.")
@json_option
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Also write a self-contained HTML report.")
@domain_errors
@checked_paths(inputs=["runs", "qrels_path", "queries_path"], outputs=["html_path"])
def compare_cmd(runs, qrels_path, metric, queries_path, rel_level, resamples, seed, tie, weighting,
                split, cluster_col, ci, unit, mix, baseline, correction, as_json, html_path):
    """Paired comparison of runs, query by query: is B better than A?

    \b
    With two runs A B: the delta of means B - A with its interval (the t
    interval; its variance follows the sampling design), queries
    better/worse/tied with an exact sign test (McNemar for binary metrics),
    P(delta <= 0), per-stratum deltas with --queries, and a verdict: "B better",
    "A better", "cannot distinguish at this query count", "equivalent within
    ±TIE" only when the whole interval lies inside ±TIE, or "no trustworthy
    interval" when the traffic weights are too unequal for any.

    \b
    With more runs: every pair (or each against --baseline), corrected for the
    number of comparisons (--correction, Holm by default): a verdict says
    better only when its adjusted p-value is below 5%.

    \b
    Examples:
      golden stats compare runs/bm25.trec runs/rerank.trec --qrels exports/v3 --metric ndcg@10 \\
          --weighting traffic --split holdout --tie 0.02 --html report.html
      golden stats compare runs/*.trec --qrels exports/v3 --baseline runs/bm25.trec --correction holm
    """
    from curation.evaluate.metrics import QrelsIndex
    from curation.evaluate.stats import compare, pair_scores

    if len(runs) < 2:
        raise click.ClickException("give at least two runs to compare")
    qrels, export_queries = _load_qrels(qrels_path)
    queries, _ = _load_queries(queries_path, export_queries)
    if queries is None and (weighting != "unweighted" or split or cluster_col or mix or unit != "query"):
        raise click.ClickException(
            "--weighting/--split/--cluster-col/--unit/--mix need --queries QUERIES.jsonl (or an export folder)")
    index = QrelsIndex.build(qrels, rel_level=rel_level)
    read = _read_runs(runs)
    options = dict(queries=queries, weighting=weighting, cluster_col=cluster_col, resamples=resamples,
                   seed=seed, ci=ci, tie=tie, split=split, unit=unit, mix=mix)
    if len(read) == 2 and baseline is None:
        ra, rb = read
        if ra.name == rb.name:
            ra.name, rb.name = f"A:{ra.name}", f"B:{rb.name}"
        paired = pair_scores(_score(ra, index, metric), _score(rb, index, metric), queries=queries, split=split)
        result = compare(paired, **options)
        render, printer = "render_comparison", _print_comparison
    else:
        from curation.evaluate.multiple import compare_many

        _unique_names(read)
        base = None
        if baseline is not None:
            matches = [i for i, (path, r) in enumerate(zip(runs, read))
                       if baseline in (r.name, path) or Path(baseline).resolve() == Path(path).resolve()]
            if len(matches) != 1:
                raise click.ClickException(f"--baseline {baseline!r} names {len(matches)} of the runs given "
                                           f"({', '.join(r.name for r in read)}); give one run's file or name")
            base = matches[0]
        result = compare_many([_score(r, index, metric) for r in read], baseline=base, correction=correction,
                              **options)
        render, printer = "render_family", _print_family
    if html_path:
        from curation.evaluate import html_report
        from curation.formats.fileio import atomic_write

        with atomic_write(html_path) as fh:
            fh.write(getattr(html_report, render)(result))
    if as_json:
        echo_json(result.as_dict())
    else:
        printer(result)
        if html_path:
            click.echo(f"report written to {html_path}")


# ---------------------------------------------------------------------------------------------
# golden stats power


@main.command("power")
@click.argument("runs", nargs=-1, type=click.Path(exists=True, allow_dash=True))
@click.option("--qrels", "qrels_path", type=click.Path(exists=True, allow_dash=True),
              help="Qrels file or export folder (with two runs).")
@click.option("--metric", default="ndcg@10", show_default=True, callback=_metric_callback, help=_METRIC_HELP)
@_rel_level_option
@click.option("--sd-diff", type=FiniteFloat(minimum=0), default=None,
              help="Standard deviation of per-query differences (without runs).")
@click.option("--queries", "n_queries", type=int, default=None, help="Number of queries (without runs).")
@click.option("--delta", type=FiniteFloat(), default=None,
              help="Smallest difference that matters, stated before looking; prints the queries needed for it "
                   "(the observed difference is never planned for).")
@json_option
@domain_errors
def power_cmd(runs, qrels_path, metric, rel_level, sd_diff, n_queries, delta, as_json):
    """What a query set can resolve: paired sd, standard error, minimum detectable
    difference (80% power, 5% two-sided level) and, for --delta, the queries needed,
    from the paired t-test's power (noncentral t; statsmodels' TTestPower gives the same).

    \b
    With two runs, the observed difference is shown as context but never planned
    for (it is inflated by selection): state --delta, the smallest difference
    that would matter.

    \b
    Examples:
      golden stats power runs/bm25.trec runs/rerank.trec --qrels exports/v3 --metric ndcg@10 --delta 0.02
      golden stats power --sd-diff 0.18 --queries 250 --delta 0.03
    """
    from curation.evaluate.metrics import QrelsIndex
    from curation.evaluate.power import power
    from curation.evaluate.stats import pair_scores

    diff = None
    if runs:
        if len(runs) != 2 or not qrels_path:
            raise click.ClickException("give two runs and --qrels, or --sd-diff with --queries and no runs")
        qrels, _ = _load_qrels(qrels_path)
        index = QrelsIndex.build(qrels, rel_level=rel_level)
        ra, rb = _read_runs(runs)
        paired = pair_scores(_score(ra, index, metric), _score(rb, index, metric))
        diff = paired.diff
    elif sd_diff is None or n_queries is None:
        raise click.ClickException("give two runs and --qrels, or both --sd-diff and --queries N")
    p = power(diff, sd=sd_diff, n=n_queries, delta=delta)
    if as_json:
        echo_json(p.as_dict())
        return
    click.echo(f"queries                       {p.n}")
    click.echo(f"paired sd of differences  s = {p.sd:.4f}")
    click.echo(f"standard error    s/sqrt(n) = {p.se:.4f}")
    click.echo(f"minimum detectable difference (80% power, 5% two-sided, paired t) = {p.multiplier:.2f} x se "
               f"= {p.mdd:.4f}")
    if p.observed is not None:
        click.echo(f"observed delta B - A        = {p.observed:+.4f}  (context only: not planned for)")
    if p.needed is not None:
        click.echo(f"queries needed for delta {p.delta:.4f} (paired t, 80% power) = {p.needed}")
    else:
        click.echo("queries needed: not planned; give --delta, the smallest difference that matters")
    for note in p.notes:
        click.echo(f"note: {note}")


# ---------------------------------------------------------------------------------------------
# golden stats noise


@main.command("noise")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True))
@_qrels_option
@click.option("--metric", default="ndcg@10", show_default=True, callback=_metric_callback, help=_METRIC_HELP)
@_rel_level_option
@click.option("--rule", type=click.Choice(NOISE_RULES), default="3sd", show_default=True,
              help="How the floor is set: 3sd (3 x the sd of the runs' means, the method's rule), range "
                   "(their max - min), paired (1.96 x sqrt(2) x sd: what one pair of runs stays within). "
                   "All three are printed; this one is the threshold.")
@_resamples_option
@seed_option
@json_option
@domain_errors
def noise_cmd(runs, qrels_path, metric, rel_level, rule, resamples, seed, as_json):
    """Noise floor from repeated runs of ONE configuration: sd, range, and the threshold
    below which a change has not been shown to move the metric (3 sd of the runs' means by
    default; --rule range or paired). The first two runs form a null arm whose interval
    must contain 0; the command says loudly when it does not. Five or more repeats are
    needed for a floor worth quoting; fewer are flagged.

    \b
    Example:
      golden stats noise runs/ann-seed1.trec runs/ann-seed2.trec runs/ann-seed3.trec --qrels exports/v3
    """
    from curation.evaluate.metrics import QrelsIndex
    from curation.evaluate.noise import noise

    qrels, _ = _load_qrels(qrels_path)
    index = QrelsIndex.build(qrels, rel_level=rel_level)
    loaded = _read_runs(runs)
    _unique_names(loaded)
    result = noise([_score(r, index, metric) for r in loaded], resamples=resamples, seed=seed, rule=rule)
    loud = [n for n in result.notes if n.startswith("NULL ARM FAILED")]
    if as_json:
        echo_json(result.as_dict())
    else:
        click.echo(f"{result.metric} over {result.n} queries, {len(result.runs)} repeated runs")
        for name, m in zip(result.runs, result.means):
            click.echo(f"  {name:<24} {m:.4f}")
        click.echo(f"sd of the means   {result.sd:.4f}")
        click.echo(f"range             {result.range:.4f}")
        explain = {"3sd": "3 x sd (the method's rule)", "range": "max - min of the means",
                   "paired": "1.96 x sqrt(2) x sd: what one pair of runs stays within"}
        click.echo("noise floor by rule:")
        for name, value in result.thresholds.items():
            mark = "  <- threshold" if name == result.rule else ""
            click.echo(f"  {name:<7} {value:.4f}  ({explain[name]}){mark}")
        click.echo(f"threshold         {result.threshold:.4f}  (--rule {result.rule}: a delta below it has not "
                   "been shown to move the metric)")
        click.echo(f"null arm {result.runs[1]} - {result.runs[0]}: {result.null_delta:+.4f} "
                   f"[{result.null_low:+.4f}, {result.null_high:+.4f}] "
                   + ("contains 0, as it must" if result.null_ok else "EXCLUDES 0"))
        for note in result.notes:
            if note not in loud:
                click.echo(f"note: {note}")
    for note in loud:
        click.secho("!" * 72, fg="red", err=True)
        click.secho(note, fg="red", bold=True, err=True)
        click.secho("!" * 72, fg="red", err=True)
    if not result.null_ok:
        raise SystemExit(EXIT_NULL_ARM)


# ---------------------------------------------------------------------------------------------
# golden stats sweep


@main.command("sweep")
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True))
@_qrels_option
@click.option("--metric", default="ndcg@10", show_default=True, callback=_metric_callback, help=_METRIC_HELP)
@click.option("--queries", "queries_path", type=click.Path(exists=True, allow_dash=True, dir_okay=False),
              help="queries.jsonl with a split field (default: the export folder's).")
@_rel_level_option
@click.option("--top", type=click.IntRange(min=1), default=3, show_default=True,
              help="How many of the best to re-measure on holdout (the method's cap is 3; more is warned about).")
@click.option("--simulations", type=int, default=2000, show_default=True, help="Resamples for the optimism.")
@seed_option
@json_option
@domain_errors
def sweep_cmd(runs, qrels_path, metric, queries_path, rel_level, top, simulations, seed, as_json):
    """Rank many configurations on the tune split, show the optimism expected from
    picking the best of that many, and re-measure only the top three on holdout.
    The winner's held-out gap is shown beside the average gap of all configurations
    (the splits' difference in difficulty) and the difference of the two.

    \b
    Example:
      golden stats sweep runs/bm25-k1-*.trec --qrels exports/v3 --metric ndcg@10
    """
    from curation.evaluate.metrics import QrelsIndex
    from curation.evaluate.noise import sweep

    qrels, export_queries = _load_qrels(qrels_path)
    queries, _ = _load_queries(queries_path, export_queries)
    if queries is None:
        raise click.ClickException("sweep needs the split: give --queries QUERIES.jsonl (or an export folder)")
    index = QrelsIndex.build(qrels, rel_level=rel_level)
    loaded = _read_runs(runs)
    _unique_names(loaded)
    result = sweep([_score(r, index, metric) for r in loaded], queries=queries, top=top,
                   simulations=simulations, seed=seed)
    if as_json:
        echo_json(result.as_dict())
        return
    click.echo(f"{result.metric}: {result.configs} configurations, {result.n_tune} tune queries, "
               f"{result.n_holdout} holdout queries")
    w = max(12, *(len(r.run) for r in result.rows))
    click.echo(f"  {'rank':>4}  {'run':<{w}}  {'tune':>7}  {'holdout':>7}  {'gap':>8}")
    for r in result.rows:
        hold = "" if r.holdout is None else f"{r.holdout:>7.4f}  {r.gap:>+8.4f}"
        click.echo(f"  {r.rank:>4}  {r.run:<{w}}  {r.tune:>7.4f}  {hold}")
    click.echo(f"expected optimism of the best of {result.configs} (simulated at the measured noise, "
               f"se {result.noise_se:.4f}): {result.optimism:+.4f}")
    lines = [("gap of the winner (tune - holdout)", result.winner_gap, ""),
             (f"average gap over all {result.configs} configurations", result.mean_gap,
              "  (the splits' difference in difficulty)"),
             ("winner's gap beyond the average", result.winner_excess, "  (the winner's own optimism)")]
    for label, value, why in lines:
        click.echo(f"{label + ':':<48}{value:+.4f}{why}")
    for note in result.notes[1:]:
        click.echo(f"note: {note}")


# ---------------------------------------------------------------------------------------------
# golden stats attribute


@main.command("attribute")
@click.argument("base", type=click.Path(exists=True, allow_dash=True))
@click.argument("a_only", type=click.Path(exists=True, allow_dash=True))
@click.argument("b_only", type=click.Path(exists=True, allow_dash=True))
@click.argument("both", type=click.Path(exists=True, allow_dash=True))
@_qrels_option
@click.option("--metric", default="ndcg@10", show_default=True, callback=_metric_callback, help=_METRIC_HELP)
@click.option("--a-name", default="A", show_default=True, help="Name of the first change.")
@click.option("--b-name", default="B", show_default=True, help="Name of the second change.")
@_rel_level_option
@_resamples_option
@seed_option
@json_option
@domain_errors
def attribute_cmd(base, a_only, b_only, both, qrels_path, metric, a_name, b_name, rel_level, resamples, seed,
                  as_json):
    """2x2 attribution of two changes: BASE (both off), A_ONLY, B_ONLY, BOTH on the same
    queries. Prints each main effect under each state of the other and the interaction
    computed both ways, each with a paired bootstrap interval.

    \b
    Example:
      golden stats attribute base.trec rerank.trec expand.trec both.trec --qrels exports/v3 \\
          --a-name rerank --b-name expansion
    """
    from curation.evaluate.attribution import attribute
    from curation.evaluate.metrics import QrelsIndex

    qrels, _ = _load_qrels(qrels_path)
    index = QrelsIndex.build(qrels, rel_level=rel_level)
    loaded = _read_runs([base, a_only, b_only, both])
    _unique_names(loaded)
    result = attribute(*[_score(r, index, metric) for r in loaded], a_name=a_name, b_name=b_name,
                       resamples=resamples, seed=seed)
    if as_json:
        echo_json(result.as_dict())
        return
    how = ("paired t intervals" if result.ci_method == "t" else
           f"paired bootstrap, {result.resamples} resamples, seed {result.seed}")
    click.echo(f"{result.metric} over {result.n} queries; {round(result.level * 100)}% {how}")
    labels = {"00": "both off", "10": f"{a_name} only", "01": f"{b_name} only", "11": "both on"}
    for cell, label in labels.items():
        click.echo(f"  {label:<16} {result.names[cell]:<24} {result.means[cell]:.4f}")
    click.echo("")
    w = max(len(e.name) for e in result.effects)
    for e in result.effects:
        click.echo(f"  {e.name:<{w}}  {e.delta:+.4f}  [{e.low:+.4f}, {e.high:+.4f}]")
    for note in result.notes:
        click.echo(f"note: {note}")
