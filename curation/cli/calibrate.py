"""``golden labels calibrate``: can this machine judge label our pairs, and where does it go wrong?

The report is :func:`curation.machine.calibrate.build_calibration_report`, the one the lead's
"Machine judges" panel shows; this module only formats it (text, ``--json``, ``--html``)."""

from __future__ import annotations

import click

from curation.cli.base import (
    checked_paths,
    db_files,
    db_option,
    domain_errors,
    echo_json,
    json_option,
    main,
    project_option,
    store_session,
)


def _pct(e) -> str:
    if e is None:
        return "not enough pairs"
    if e.get("value") is None:
        return f"undefined ({e.get('undefined')})"
    s = f"{100 * e['value']:.1f}%"
    if e.get("low") is not None:
        s += f" [{100 * e['low']:.1f}%, {100 * e['high']:.1f}%]"
    return s


def _num(e, sign: bool = False) -> str:
    if e is None:
        return "not enough pairs"
    if e.get("value") is None:
        return f"undefined ({e.get('undefined')})"
    f = "{:+.3f}" if sign else "{:.3f}"
    s = f.format(e["value"])
    if e.get("low") is not None:
        s += f" [{f.format(e['low'])}, {f.format(e['high'])}]"
    return s


_MEASURES = [("agreement", "percent agreement"), ("kappa", "Cohen's kappa"),
             ("kappa_linear", "Cohen's kappa, linear"), ("kappa_quadratic", "Cohen's kappa, quadratic"),
             ("alpha_nominal", "Krippendorff's alpha, nominal"), ("alpha_ordinal", "Krippendorff's alpha, ordinal")]


def _echo_text(d: dict) -> None:
    """Print the calibration report ``d`` as text, section by section in the order it is read; one
    function on purpose, so that the printed layout reads top to bottom as the report does."""
    echo = click.echo
    models = ", ".join(d["models"]) or "model not given"
    echo(f"machine judge {d['machine']} (kind: machine; {models}; prompt version {d['prompt_version']}) "
         f"against the final human labels of project {d['project']}; every figure is on {d['figures_on']}")
    echo(f"compared pairs: {d['pairs']} over {d['queries']} queries (the machine labelled {d['machine_pairs']} "
         f"pairs, people {d['human_pairs']}); intervals: 95% query bootstrap, {d['bootstrap']['resamples']} "
         f"resamples, seed {d['bootstrap']['seed']}")
    for note in d["notes"]:
        echo(f"note: {note}")
    if not d["enough_pairs"]:
        echo(f"not enough pairs: {d['pairs']} compared, {d['min_pairs']} needed for any figure")
    else:
        h = d["headline"]
        echo(f"headline: exact agreement {_pct(h['exact'])}, within one grade {_pct(h['within_one'])}, "
             f"mean signed difference (machine - human) {_num(h['signed'], True)}: {d['lean']}")
        hh = d["human_human"]
        pw = d["human_pairwise"]
        echo("")
        echo(f"{'':<32} {'machine vs humans':<28} humans vs humans (overlap set"
             f"{', ' + str(hh['pairs']) + ' pairs' if hh else ': none'})")
        for key, title in _MEASURES:
            m = d["agreement"]["measures"].get(key)
            if m is None:
                continue
            fmt = _pct if key == "agreement" else _num
            human = hh["measures"].get(key) if hh else None
            if human is None and len(pw) == 1:
                human = pw[0]["measures"].get(key)
            echo(f"  {title:<30} {fmt(m):<28} {fmt(human) if human else '-'}")
    if d["machine_vs_people"] or d["human_pairwise"]:
        echo("on the overlap set, like for like (exact agreement, Cohen's kappa):")
        for a in d["human_pairwise"]:
            echo(f"  {' vs '.join(a['judges']):<30} {_pct(a['measures']['agreement']):<28} "
                 f"{_num(a['measures']['kappa'])}  ({a['pairs']} pairs)")
        for a in d["machine_vs_people"]:
            echo(f"  {a['judges'][0] + ' vs the machine':<30} {_pct(a['measures']['agreement']):<28} "
                 f"{_num(a['measures']['kappa'])}  ({a['pairs']} pairs)")
    v = d["verdict"]
    echo(f"verdict: {v['band']}: {v['message']}")
    echo(f"  rule: {v['rule']}")
    if d["enough_pairs"]:
        scale = d["scale"]
        echo("confusion (rows: human grade, columns: machine grade):")
        echo("        " + "".join(f"{'m' + str(g):>7}" for g in scale))
        for g, row in zip(scale, d["confusion"]["matrix"]):
            echo(f"  {'h' + str(g):<6}" + "".join(f"{n:>7}" for n in row))
        echo("signed differences (machine - human): " +
             ", ".join(f"{int(k):+d}: {n}" for k, n in d["signed_differences"].items()))
    echo("")
    echo("bias checks (excess = signed difference beyond the machine's mean at that human grade; a group's")
    echo("contrast = its excess minus the rest's, each pair's excess taken within its document length decile):")
    for c in d["bias_checks"]:
        mark = "FLAG" if c["flagged"] else (" ok " if c["tested"] else "info")
        echo(f"  [{mark}] {c['title']}: {c['finding'] or 'shown, not tested'}")
        for g in c["groups"]:
            if g["agreement"] is None and g["contrast"] is not None:
                flag = "  <- flagged" if g["flagged"] else ""
                echo(f"      {g['name']:<34} contrast {_num(g['contrast'], True)}{flag}")
                continue
            stale = "  (stale)" if g.get("stale") else ""
            tested = f"  contrast {_num(g['contrast'], True)}" if g["contrast"] is not None else ""
            echo(f"      {g['name'][:34]:<34} {g['pairs']:>6} pairs  agreement {_pct(g['agreement']):<24} "
                 f"signed {_num(g['signed'], True):<26}{tested}{'  <- flagged' if g['flagged'] else ''}{stale}")
        echo(f"      rule: {c['rule']}")
    r = d["repeats"]
    echo("")
    if r is None:
        echo("repeat consistency: one sample per pair (import several samples to measure it)")
    else:
        mark = "FLAG" if r["flagged"] else " ok "
        echo(f"repeat consistency [{mark}]: {r['pairs']} pairs with up to {r['samples']} samples; all samples "
             f"agree on {_pct(r['all_same'])}, label changes on {_pct(r['changed'])}; alpha between samples "
             f"{_num(r['alpha'])}")
        for k in r["majority_of_k"]:
            echo(f"  majority of {k['k']} sample(s): agreement with humans {_pct(k['agreement'])} ({k['pairs']} pairs)")
        echo(f"  rule: {r['rule']}")
    p = d["probabilities"]
    if p is None:
        echo("probabilities: none given")
    else:
        extra = (f"; Brier of P(relevant) {p['brier_relevant']:.4f}, ECE {p['ece_relevant']:.4f}"
                 if p["brier_relevant"] is not None else "")
        echo(f"probabilities ({p['pairs']} pairs): Brier score of the confidence vs agreement {p['brier']:.4f}, "
             f"expected calibration error {p['ece']:.4f}{extra}")
        echo("  reliability: " + ", ".join(f"{b['predicted']:.2f}->{b['observed']:.2f} (n={b['pairs']})"
                                          for b in p["reliability"]))
        echo(f"  {'confidence band':<16} {'pairs':>6}  {'agreement':<26} {'accept from here: agreement':<30} to people")
        for b in p["bands"]:
            echo(f"  {b['low']:.2f}-{b['high']:.2f}{'':<7} {b['pairs']:>6}  {_pct(b['agreement']):<26} "
                 f"{_pct(b['accepted_agreement']):<30} {b['to_people']}")
    if len(d["prompt_versions"]) > 1:
        echo("prompt versions (oldest first; figures under an older version than the newest are stale):")
        for v in d["prompt_versions"]:
            stale = " STALE" if v["stale"] else " (current)"
            line = f"  {v['version']}{stale}: {v['pairs']} pairs, agreement with humans {_pct(v['agreement'])}"
            if v["stale"]:
                line += (f"; on {v['shared']} pairs shared with the current version: same label "
                         f"{_pct(v['same_as_current'])}, agreement {_pct(v['agreement_shared'])} vs current "
                         f"{_pct(v['current_agreement_shared'])}")
            echo(line)
    rk = d["ranking"]
    if rk is not None:
        echo(f"effect on the decision ({rk['metric']}, {rk['queries']} queries, {rk['note']}):")
        for c in rk["comparisons"]:
            tau = "undefined" if c["kendall_tau"] is None else f"{c['kendall_tau']:.3f}"
            echo(f"  {c['labels']} labels: Kendall's tau with the human ranking {tau}; {c['swapped_pairs']} pairs "
                 f"of runs swapped, {c['swapped_significant_pairs']} of them significant under human labels "
                 f"({c.get('correction', 'holm')}-corrected over {len(c['pairs'])} pairs); "
                 f"{c['verdicts_changed']} verdicts change")
            for pv in c["pairs"]:
                if pv["verdict_changed"] or pv["swapped"]:
                    echo(f"    {pv['a']} vs {pv['b']}: human {pv['human_verdict']} ({pv['human_delta']:+.4f}) -> "
                         f"{c['labels']} {pv['other_verdict']} ({pv['other_delta']:+.4f})")
    echo(d["checks_summary"])


@main.command("calibrate")
@project_option
@click.option("--machine", "machine", required=True, metavar="NAME", help="The machine judge to measure.")
@click.option("--metric", default="ndcg@10", show_default=True,
              help="Metric the runs are ranked by for the effect on the decision.")
@click.option("--resamples", type=click.IntRange(min=100), default=1000, show_default=True,
              help="Query-bootstrap resamples for every interval.")
@json_option
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the report as a self-contained HTML page (the lead panel's fragment).")
@db_option
@domain_errors
@checked_paths(inputs=[("db_url", db_files)], outputs=["html_path"])
def calibrate_cmd(project_name, machine, metric, resamples, as_json, html_path, db_url):
    """Measure a machine judge against the final human labels, with 95% query-bootstrap intervals:
    agreement next to the humans' own on the overlap set and a verdict, the confusion matrix and
    signed differences, bias checks (document length, stratum, query shape, run and rank, model),
    repeat consistency, calibration of its probabilities, prompt versions compared, and how the
    ranking of the project's runs changes under its labels. Below 30 compared pairs it says
    "not enough pairs" instead of a figure.

    \b
    Example:
      golden judging import llm.jsonl --judge llm --machine --prompt-version v3
      golden labels calibrate --project demo --machine llm
      golden labels calibrate --project demo --machine llm --json > llm-calibration.json
    """
    from curation.machine.calibrate import build_calibration_report
    from curation.store.projects import get_project

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        report = build_calibration_report(s, proj, machine, resamples=resamples, metric=metric)
    d = report.as_dict()
    if html_path:
        from curation.formats.fileio import atomic_write
        from judging_app.machine_page import render_report_page

        with atomic_write(html_path) as fh:
            fh.write(render_report_page(d))
    if as_json:
        echo_json(d)
        return
    _echo_text(d)
    if html_path:
        click.echo(f"report written to {html_path}")
