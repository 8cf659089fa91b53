"""``golden leakcheck``: find golden queries whose text sits in the corpus."""

from __future__ import annotations

import sys

import click

from curation.cli.base import (
    checked_paths,
    db_files,
    db_option,
    domain_errors,
    main,
    on_conflict_option,
    open_db,
    project_option,
)

EXIT_LEAKS = 3


def _modes(ctx, param, value):
    modes = [m.strip().lower() for m in value.split(",") if m.strip()]
    from curation.leak.report import MODES

    bad = [m for m in modes if m not in MODES]
    if bad or not modes:
        raise click.BadParameter(f"{', '.join(bad) or value!r}: use a comma-separated list of {', '.join(MODES)}")
    return tuple(modes)


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def format_summary(report, out_path: str | None, *, top: int = 10) -> str:
    """The summary a person reads after a run (also used by tests)."""
    rate = report.chunks / report.seconds if report.seconds > 0 else float("inf")
    lines = [
        f"leak check: {len(report.queries):,} queries against {report.chunks:,} chunks "
        f"in {report.seconds:.1f} s ({rate:,.0f} chunks/s, {report.tasks} piece{'s' if report.tasks != 1 else ''} "
        f"on {report.processes} process{'es' if report.processes != 1 else ''})",
        f"modes {', '.join(report.modes)}; threshold {report.threshold:g}; n-grams {report.ngram}",
        "",
        f"{'':28}{'queries':>9}{'share':>9}",
    ]
    for what, n, share in report.summary_rows():
        lines.append(f"{what:28}{n:>9,}{share:>9}")
    short = [q for q in report.queries if q.status == "too_short"]
    if short:
        lines.append("")
        lines.append(f"{len(short)} too short to judge (not clean): " + ", ".join(q.qid for q in short[:8])
                     + (" ..." if len(short) > 8 else ""))
    if report.boilerplate:
        share = report.boilerplate_share
        state = "discounted" if report.discounted else "NOT discounted (use --discount-boilerplate)"
        lines.append("")
        lines.append(f"boilerplate: {len(report.boilerplate)} query n-grams sit in >= {share:.0%} of chunks, {state}:")
        for gram, count in report.boilerplate[:5]:
            lines.append(f"  {_clip(repr(gram), 40):42}{count:>12,} chunks ({count / max(report.chunks, 1):.1%})")
    leaked = report.leaked
    if leaked:
        lines.append("")
        lines.append(f"flagged queries (best match; {min(top, len(leaked))} of {len(leaked)}):")
        for q in leaked[:top]:
            m = q.matches[0]
            lines.append(
                f"  {q.qid:14} {m.mode:11} {m.score:5.3f}  {_clip(m.chunk_id, 18):18}  "
                f"{_clip(q.text, 36)!r}  ({q.n_matches} match{'es' if q.n_matches != 1 else ''})"
            )
    if out_path:
        lines.append("")
        lines.append(f"every query's status and matches written to {out_path}")
    return "\n".join(lines)


def record_in_project(out_path: str, project_name: str, db_url: str | None) -> str:
    """Store the findings of ``out_path`` in the project; a line saying what was recorded."""
    from sqlmodel import Session

    from curation.leak.findings import record_findings
    from curation.leak.report import read_report
    from curation.store.projects import get_project

    engine = open_db(db_url)
    with Session(engine) as session:
        project = get_project(session, project_name)
        summary = record_findings(session, project, read_report(out_path))
    line = (f"recorded in project {project_name!r}: {summary.queries} queries' leak status, "
            f"{summary.findings} findings to review")
    if summary.kept_decided:
        line += f" ({summary.kept_decided} already decided kept)"
    if summary.unknown_qids:
        line += (f"; {len(summary.unknown_qids)} qids are not in the project "
                 f"({', '.join(summary.unknown_qids[:5])}{' ...' if len(summary.unknown_qids) > 5 else ''})")
    return line


@main.command()
@click.option("--queries", "queries_path", required=True, type=click.Path(exists=True, allow_dash=True, dir_okay=False),
              help="Golden queries (JSONL with qid and text, as written by `golden sample queries`).")
@click.option("--corpus", "corpus_paths", required=True, multiple=True,
              type=click.Path(exists=True, allow_dash=True, dir_okay=False),
              help="Corpus files (JSONL, TSV or Parquet, gzip allowed); several may follow one --corpus.")
@click.argument("more_corpus", nargs=-1, type=click.Path(exists=True, allow_dash=True, dir_okay=False))
@click.option("--mode", "modes", default="exact,jaccard,containment", show_default=True, callback=_modes,
              help="Comma-separated: exact (verbatim), jaccard (the chunk is the query), containment "
                   "(the query is quoted in the chunk).")
@click.option("--threshold", type=float, default=0.85, show_default=True,
              help="Flag jaccard/containment scores at or above this (0 < t <= 1).")
@click.option("--ngram", default="word:3", show_default=True,
              help="word:N or char:N (char:5 or more for containment).")
@click.option("--workers", type=int, default=None,
              help="Processes to scan with [default: the cores the machine's load leaves idle (cores less the "
                   "1-minute load average, rounded), at most one per 64 MB of corpus, at least 1; on a busy "
                   "machine one process scans fastest].")
@click.option("--dask", "dask_address", metavar="SCHEDULER", default=None,
              help="Run the scan on a Dask cluster (e.g. tcp://10.0.0.5:8786); its workers must see the corpus paths.")
@click.option("--boilerplate-share", type=float, default=0.05, show_default=True,
              help="A query n-gram held by at least this share of the chunks is reported as boilerplate.")
@click.option("--discount-boilerplate", is_flag=True,
              help="Leave boilerplate n-grams out of the comparison (a second pass over the corpus).")
@click.option("--max-matches", type=int, default=100, show_default=True,
              help="Matching chunks kept per query (best first; all are counted).")
@click.option("--fail-on-leak", is_flag=True, help=f"Exit with status {EXIT_LEAKS} when any query leaks (for CI).")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False),
              help="JSONL: one line per query with its status and matching chunks (written whole or not at all).")
@project_option(help_text="Also record the findings in this project (leads review them on its Leak check page).")
@on_conflict_option
@db_option
@domain_errors
@checked_paths(inputs=["queries_path", "corpus_paths", "more_corpus", ("db_url", db_files)], outputs=["out_path"])
def leakcheck_cmd(queries_path, corpus_paths, more_corpus, modes, threshold, ngram, workers, dask_address,
              boilerplate_share, discount_boilerplate, max_matches, fail_on_leak, out_path, project_name, on_conflict,
              db_url):
    """Find golden queries whose text sits in the corpus (exact, Jaccard or containment of n-grams).

    Every score is computed exactly on the normalised texts' n-gram sets; the corpus is streamed
    once, on the idle cores. Queries with too few n-grams to judge are reported as too short, not clean.

    \b
    Example:
      golden leakcheck --queries queries.jsonl --corpus shards/*.jsonl.gz \\
          --mode exact,containment --threshold 0.85 --fail-on-leak --out leaks.jsonl
      golden leakcheck --queries queries.jsonl --corpus corpus.parquet \\
          --out leaks.jsonl --project news --db golden.db   # leads decide in the app
    """
    from curation.formats.conflicts import Dedup
    from curation.leak.driver import leakcheck as run_leakcheck
    from curation.leak.inputs import query_texts
    from curation.leak.report import write_report

    dedup = Dedup(queries_path, policy=on_conflict, what="qid")
    queries = query_texts(queries_path, dedup)
    corpus = list(corpus_paths) + list(more_corpus)
    Dedup(corpus[0], policy=on_conflict, what="document")  # a bad --on-conflict is refused before the scan
    report = run_leakcheck(
        queries,
        corpus,
        modes=modes,
        threshold=threshold,
        ngram=ngram,
        workers=workers,
        dask=dask_address,
        boilerplate_share=boilerplate_share,
        discount_boilerplate=discount_boilerplate,
        max_matches=max_matches,
        progress=sys.stderr.isatty(),
    )
    if report.ids_repeat:
        # The scan saw an id twice: only then is the corpus read again, by the exact reader, for the
        # repeats' lines and --on-conflict (identical ones counted, conflicting ones refused).
        from curation.formats.corpus import check_repeats

        corpus_dedup = check_repeats(corpus, on_conflict=on_conflict)
    else:
        corpus_dedup = Dedup(corpus[0], policy=on_conflict, what="document")
    write_report(report, out_path)
    click.echo(format_summary(report, out_path))
    for line in (dedup.summary(), corpus_dedup.summary()):
        if line:
            click.echo(line)
    if project_name is not None:
        click.echo(record_in_project(out_path, project_name, db_url))
    if fail_on_leak and report.leaked:
        click.echo(f"{len(report.leaked)} leaking queries: failing as asked (--fail-on-leak)", err=True)
        sys.exit(EXIT_LEAKS)
