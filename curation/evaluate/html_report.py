"""A self-contained HTML report of one paired comparison (``golden stats compare --html``).

One file, no script, no external resource (no CDN, no font, no image file): the per-query
differences, sorted, and the bootstrap distribution of the delta are drawn as inline SVG. Every
piece of text that comes from the data (run names, qids, stratum labels) is escaped with
:func:`html.escape`, so a hostile run name or qid cannot become live HTML.
"""

from __future__ import annotations

import math
from html import escape

import numpy as np

from curation.evaluate.stats import Comparison

__all__ = ["render_comparison", "render_family", "sorted_differences_svg", "bootstrap_svg"]

_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2330;\
margin:2rem auto;max-width:62rem;padding:0 1rem}
h1{font-size:1.35rem;margin:0 0 .3rem}h2{font-size:1.08rem;margin:1.8rem 0 .5rem}
.sub{color:#5b6475;margin:0 0 1rem}
table{border-collapse:collapse;margin:.4rem 0}\
td,th{padding:.25rem .7rem;text-align:right;border-bottom:1px solid #e3e6ec}
th:first-child,td:first-child{text-align:left}th{font-weight:600;background:#f5f6f9}
.verdict{display:inline-block;padding:.35rem .8rem;border-radius:.4rem;font-weight:600;background:#eef1f6}
.verdict.b{background:#dff3e4;color:#145c2c}.verdict.a{background:#fde6e4;color:#8a1c12}
.note{color:#6b4e00;background:#fff6db;padding:.3rem .6rem;border-radius:.3rem;margin:.3rem 0}
.note.warn{color:#7a1212;background:#fde8e8;font-weight:600}
svg{background:#fbfcfd;border:1px solid #e3e6ec;border-radius:.3rem;max-width:100%;height:auto}
.scroll{overflow-x:auto;max-width:100%}
.axis{stroke:#8a93a3;stroke-width:1}.zero{stroke:#1d2330;stroke-width:1.2}
.pos{fill:#2f8f4e}.neg{fill:#c0392b}.tie{fill:#9aa3b2}.bar{fill:#6d8fc7}
.ci{stroke:#d98c00;stroke-width:2;stroke-dasharray:5 3}.obs{stroke:#1d2330;stroke-width:2}
text{font:12px system-ui,sans-serif;fill:#3a4252}.tieband{fill:#f3e9c6;opacity:.7}
"""


def _f(x: float, digits: int = 4, sign: bool = False) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _scale(lo: float, hi: float, a: float, b: float):
    if hi == lo:
        hi, lo = hi + 1e-9, lo - 1e-9
    return lambda v: a + (v - lo) * (b - a) / (hi - lo)


def sorted_differences_svg(qids, diffs, *, width: int = 900, height: int = 260) -> str:
    """Bars of the per-query differences B - A, sorted ascending; each bar's title names its query."""
    diffs = np.asarray(diffs, dtype=float)
    order = np.argsort(diffs, kind="stable")
    n = len(diffs)
    pad_l, pad_r, pad_t, pad_b = 48, 10, 12, 26
    top = max(float(diffs.max(initial=0)), 0.0)
    bottom = min(float(diffs.min(initial=0)), 0.0)
    y = _scale(bottom, top, height - pad_b, pad_t)
    bw = (width - pad_l - pad_r) / max(n, 1)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="sorted per-query differences">']
    y0 = y(0.0)
    for i, j in enumerate(order):
        d = diffs[j]
        cls = "pos" if d > 1e-12 else "neg" if d < -1e-12 else "tie"
        x = pad_l + i * bw
        y1 = y(d)
        h = max(abs(y1 - y0), 1.0 if cls == "tie" else 0.5)
        top_y = min(y0, y1) if cls != "tie" else y0 - 0.5
        parts.append(
            f'<rect class="{cls}" x="{x:.2f}" y="{top_y:.2f}" width="{max(bw * 0.9, 0.6):.2f}" height="{h:.2f}">'
            f"<title>{escape(str(qids[j]))}: {d:+.4f}</title></rect>"
        )
    parts.append(f'<line class="zero" x1="{pad_l}" x2="{width - pad_r}" y1="{y0:.2f}" y2="{y0:.2f}"/>')
    parts.append(f'<line class="axis" x1="{pad_l}" x2="{pad_l}" y1="{pad_t}" y2="{height - pad_b}"/>')
    for v in (bottom, top):
        parts.append(f'<text x="{pad_l - 4}" y="{y(v) + 4:.2f}" text-anchor="end">{v:+.2f}</text>')
    parts.append(f'<text x="{pad_l}" y="{height - 6}">queries, sorted by B − A ({n})</text>')
    parts.append("</svg>")
    return "".join(parts)


def bootstrap_svg(replicates, *, delta: float, low: float, high: float, tie: float | None = None,
                  bins: int = 60, width: int = 900, height: int = 240) -> str:
    """Histogram of the bootstrap replicates of the delta, with 0, the observed delta, the interval
    and (shaded) the declared tie band."""
    reps = np.asarray(replicates, dtype=float)
    reps = reps[np.isfinite(reps)]
    lo_x = min(float(reps.min(initial=0)), 0.0, low, -tie if tie else 0.0)
    hi_x = max(float(reps.max(initial=0)), 0.0, high, tie or 0.0)
    counts, edges = np.histogram(reps, bins=bins, range=(lo_x, hi_x) if hi_x > lo_x else None)
    pad_l, pad_r, pad_t, pad_b = 48, 10, 12, 26
    x = _scale(edges[0], edges[-1], pad_l, width - pad_r)
    y = _scale(0, max(int(counts.max(initial=1)), 1), height - pad_b, pad_t)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="bootstrap distribution of the delta">']
    if tie:
        parts.append(f'<rect class="tieband" x="{x(-tie):.2f}" y="{pad_t}" width="{x(tie) - x(-tie):.2f}" '
                     f'height="{height - pad_b - pad_t}"><title>declared tie ±{tie:g}</title></rect>')
    for c, a, b in zip(counts, edges[:-1], edges[1:]):
        if c:
            parts.append(f'<rect class="bar" x="{x(a):.2f}" y="{y(c):.2f}" width="{max(x(b) - x(a) - 0.5, 0.5):.2f}" '
                         f'height="{y(0) - y(c):.2f}"><title>{a:+.4f} to {b:+.4f}: {c}</title></rect>')
    for cls, v, label in (("zero", 0.0, "0"), ("ci", low, f"{low:+.4f}"), ("ci", high, f"{high:+.4f}"),
                          ("obs", delta, f"Δ {delta:+.4f}")):
        parts.append(f'<line class="{cls}" x1="{x(v):.2f}" x2="{x(v):.2f}" y1="{pad_t}" y2="{height - pad_b}"/>')
        parts.append(f'<text x="{x(v) + 3:.2f}" y="{pad_t + 10}">{escape(label)}</text>')
    parts.append(f'<line class="axis" x1="{pad_l}" x2="{width - pad_r}" y1="{y(0):.2f}" y2="{y(0):.2f}"/>')
    parts.append(f'<text x="{pad_l}" y="{height - 6}">{len(reps)} bootstrap replicates of the delta</text>')
    parts.append("</svg>")
    return "".join(parts)


def _coverage_html(coverage, warn_below: float) -> list[str]:
    """The judged share of each run's top-k, and a warning above the verdict for a run under
    ``warn_below`` (its metric counts the unjudged documents as not relevant)."""
    if not coverage:
        return []
    e = escape
    out = []
    for r in coverage:
        judged = 1.0 - r.share
        if r.retrieved and judged < warn_below:
            out.append(f"<p class=\"note warn\" data-coverage-warning=\"{e(r.name)}\">Warning: only "
                       f"{100 * judged:.1f}% of {e(r.name)}'s top-{r.depth} is judged (below {100 * warn_below:.0f}%). "
                       "Its unjudged documents count as not relevant, so the verdict below is not reliable: judge "
                       "more of the pool first.</p>")
    cells = "".join(f"<tr><td>{e(r.name)}</td><td>{100 * (1.0 - r.share):.1f}%</td>"
                    f"<td>{r.unjudged} of {r.retrieved}</td></tr>" for r in coverage)
    out.append(f"<table class=\"coverage\"><tr><th>run</th><th>top-{coverage[0].depth} judged</th>"
               f"<th>unjudged</th></tr>{cells}</table>")
    return out


def render_comparison(c: Comparison, *, title: str | None = None, coverage=None, warn_below: float = 0.9,
                      back: tuple[str, str] | None = None) -> str:
    """The whole report as one HTML document (a string). ``coverage``: optional
    :class:`curation.evaluate.coverage.RunCoverage` of the two runs, shown with a warning when a
    run's top-k is judged below ``warn_below``; ``back``: (URL, label) of a link back to the app."""
    e = escape
    head = title or f"{c.metric}: {c.name_b} vs {c.name_a}"
    vclass = "b" if c.verdict == "B better" else "a" if c.verdict == "A better" else ""
    rows = [
        ("A", c.name_a, _f(c.mean_a), f"{100 * c.judged_a:.1f}%"),
        ("B", c.name_b, _f(c.mean_b), f"{100 * c.judged_b:.1f}%"),
    ]
    out = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>{e(head)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(head)}</h1>",
        f"<p class=\"sub\">{c.n} queries · weighting: {e(c.weighting)} · unit: {e(c.unit)} · "
        f"{e(c.interval_text)}"
        + (f" · split: {e(c.split)}" if c.split else "")
        + (f" · cluster bootstrap on {e(c.cluster_col)} ({c.clusters} clusters)" if c.cluster_col else "")
        + (f" · declared tie ±{c.tie:g}" if c.tie else "")
        + "</p>",
        f"<p class=\"sub\">estimator: {e(c.estimator)}"
        + (" · target mix: " + e(", ".join(f"{k} {v:g}" for k, v in c.mix.items())) if c.mix else "")
        + "</p>",
        *_coverage_html(coverage, warn_below),
        f"<p><span class=\"verdict {vclass}\">{e(c.verdict)}</span></p>",
        "<table><tr><th>arm</th><th>run</th><th>mean</th><th>judged</th></tr>",
    ]
    for arm, name, mean, judged in rows:
        out.append(f"<tr><td>{arm}</td><td>{e(name)}</td><td>{mean}</td><td>{judged}</td></tr>")
    out.append("</table><table>")
    stat_rows = [
        ("delta B − A", f"{_f(c.delta, sign=True)} [{_f(c.low, sign=True)}, {_f(c.high, sign=True)}]"),
        ("P(delta ≤ 0)" + (" (same t distribution as the interval)" if c.ci_method == "t" else " over the bootstrap"),
         _f(c.p_delta_le_0)),
        ("queries B better / worse / tied", f"{c.sign.better} / {c.sign.worse} / {c.sign.tied}"),
        ("exact sign test, two-sided p", f"{c.sign.pvalue:.4g}"),
    ]
    if c.mcnemar is not None:
        m = c.mcnemar
        stat_rows.append(("exact McNemar (A only / B only), p", f"{m.a_only} / {m.b_only}, p = {m.pvalue:.4g}"))
    if c.dropped:
        reasons = ", ".join(f"{k}: {v}" for k, v in c.drop_reasons.items())
        stat_rows.append(("queries dropped from both arms", f"{c.dropped} ({e(reasons)})"))
    for k, v in stat_rows:
        out.append(f"<tr><td>{e(k)}</td><td>{v}</td></tr>")
    out.append("</table>")
    for note in c.notes:
        out.append(f"<p class=\"note\">{e(note)}</p>")
    if c.strata:
        out.append("<h2>Per stratum</h2><table><tr><th>stratum</th><th>queries</th><th>weight</th>"
                   "<th>A</th><th>B</th><th>delta</th><th>interval</th></tr>")
        for s in c.strata:
            out.append(
                f"<tr><td>{e(s.label)}</td><td>{s.n}</td><td>{s.weight:.3f}</td><td>{_f(s.mean_a)}</td>"
                f"<td>{_f(s.mean_b)}</td><td>{_f(s.delta, sign=True)}</td>"
                f"<td>[{_f(s.low, sign=True)}, {_f(s.high, sign=True)}]</td></tr>"
            )
        out.append("</table>")
    if c.diffs is not None:
        out.append("<h2>Per-query differences, sorted</h2>")
        out.append(sorted_differences_svg(c.qids, c.diffs))
    if c.replicates is not None:
        out.append("<h2>Bootstrap distribution of the delta</h2>")
        out.append(bootstrap_svg(c.replicates, delta=c.delta, low=c.low, high=c.high, tie=c.tie))
    if back is not None:
        out.append(f"<p><a href=\"{e(back[0])}\">{e(back[1])}</a></p>")
    out.append("<p class=\"sub\">Made by golden stats compare. Delta = mean over queries of (B − A); "
               "the interval is described at the top; the bootstrap resamples queries as they were sampled."
               "</p></body></html>")
    return _scrolling("\n".join(out))


def render_family(f, *, title: str | None = None, coverage=None, warn_below: float = 0.9,
                  back: tuple[str, str] | None = None) -> str:
    """The report of a family of comparisons (``golden stats compare`` of N runs, the app's report of
    several runs): one row per pair with its interval, p-value, adjusted p-value and corrected
    verdict, the correction named above the table, then each pair's notes once."""
    e = escape
    head = title or f"{f.metric}: {len(f.runs)} runs"
    first = f.rows[0].comparison
    what = f"each against the baseline {f.baseline}" if f.baseline else f"every pair ({len(f.rows)} comparisons)"
    out = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<title>{e(head)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{e(head)}</h1>",
        f"<p class=\"sub\">{e(what)} · {first.n} queries paired (first pair) · weighting: {e(first.weighting)} · "
        f"{e(first.interval_text)}</p>",
        f"<p class=\"sub\" data-correction=\"{e(f.correction)}\">correction for {len(f.rows)} "
        f"comparison{'s' if len(f.rows) != 1 else ''}: "
        f"{e(f.correction_text)}</p>",
        *_coverage_html(coverage, warn_below),
        "<table><tr><th>A</th><th>B</th><th>mean A</th><th>mean B</th><th>delta B − A</th><th>interval</th>"
        "<th>p</th><th>adjusted p</th><th>verdict</th></tr>",
    ]
    for r in f.rows:
        c = r.comparison
        vclass = "b" if r.verdict == "B better" else "a" if r.verdict == "A better" else ""
        out.append(f"<tr><td>{e(c.name_a)}</td><td>{e(c.name_b)}</td><td>{_f(c.mean_a)}</td><td>{_f(c.mean_b)}</td>"
                   f"<td>{_f(c.delta, sign=True)}</td><td>[{_f(c.low, sign=True)}, {_f(c.high, sign=True)}]</td>"
                   f"<td>{_f(r.p)}</td><td>{_f(r.p_adjusted)}</td>"
                   f"<td><span class=\"verdict {vclass}\">{e(r.verdict)}</span></td></tr>")
    out.append("</table>")
    for note in f.notes + list(dict.fromkeys(n for r in f.rows for n in r.comparison.notes)):
        out.append(f"<p class=\"note\">{e(note)}</p>")
    if back is not None:
        out.append(f"<p><a href=\"{e(back[0])}\">{e(back[1])}</a></p>")
    out.append("<p class=\"sub\">Made by golden stats compare. Each delta is the mean over queries of (B − A); "
               "a verdict "
               "says better only when the adjusted p-value is below the level.</p></body></html>")
    return _scrolling("\n".join(out))


def _scrolling(page: str) -> str:
    """Each table in a box that scrolls sideways on a narrow screen (the page itself never does),
    a named region a keyboard can reach (WCAG: scrollable regions must be focusable)."""
    return (page.replace("<table", '<div class="scroll" tabindex="0" role="region" aria-label="table"><table')
            .replace("</table>", "</table></div>"))
