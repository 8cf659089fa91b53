"""``golden sample queries``: a stratified, traffic-weighted query set from a search log."""

from __future__ import annotations

import re

import click

from curation.cli.base import checked_paths, domain_errors, glob_files, main, seed_option


def format_strata_table(strata) -> str:
    """The per-stratum table: distinct queries, traffic share, allocated, whether the floor applied."""
    head = ("stratum", "distinct", "traffic", "share", "allocated", "floor applied")
    body = []
    for s in strata:
        if s.label == "handwritten":
            note = "outside --size, weight 0"
        elif s.short:
            note = f"short: all {s.distinct} taken"
        elif s.floor_applied:
            note = f"yes (floor {s.floor})"
        else:
            note = ""
        body.append((s.label, f"{s.distinct:,}", f"{s.traffic:,}", f"{s.share:.1%}", f"{s.allocated:,}", note))
    widths = [max(len(r[i]) for r in [head, *body]) for i in range(len(head))]
    lines = []
    for r in [head, *body]:
        cells = [r[0].ljust(widths[0])] + [r[i].rjust(widths[i]) for i in range(1, 5)] + [r[5]]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


@main.command()
@click.argument("log", nargs=-1, required=True)
@click.option("--query-col", required=True, help="Column (or JSON field) holding the query text.")
@click.option("--count-col", default=None, help="Column saying how many searches a row stands for (default: one each).")
@click.option("--user-col", default=None, help="Column identifying the user, to count distinct users per query.")
@click.option("--stratum", "strata", multiple=True,
              help="Column whose values define strata; repeat for more dimensions.")
@click.option("--shape", is_flag=True,
              help="Add the query's shape (question or keyword) as one more stratum dimension.")
@click.option("--size", required=True, type=click.IntRange(min=1),
              help="Logged queries to draw, exactly (hand-written ones come on top).")
@click.option("--floor", default=20, show_default=True, type=click.IntRange(min=0),
              help="Minimum queries per stratum (or all it has).")
@seed_option
@click.option("--weighting", type=click.Choice(["traffic", "uniform"]), default="traffic", show_default=True,
              help="Within a stratum, draw by traffic (head queries likelier) or every distinct query alike.")
@click.option("--head", type=click.Choice(["certain", "drawn"]), default="certain", show_default=True,
              help="With --weighting uniform: take each stratum's head whole (queries with at least half a draw's "
                   "share of the traffic, while two draws are left) and draw the rest alike, so a traffic-weighted "
                   "mean gets an honest interval; 'drawn': every query alike, head included (no trustworthy "
                   "traffic-weighted interval on a Zipf-shaped log).")
@click.option("--draw-key", type=click.Choice(["v2", "v1"]), default="v2", show_default=True,
              help="The rule of the seeded keys that order each stratum's draw (curation.sample.draw.DRAW_KEY_RULES): "
                   "v2, splitmix64 over the text's bytes; v1, a keyed BLAKE2b, the rule of golden releases before "
                   "v2, to reproduce their samples with the same --seed. The rule used is printed.")
@click.option("--handwritten", type=click.Path(dir_okay=False), default=None,
              help="Hand-written queries (.txt one per line, .jsonl with \"text\", .csv/.tsv with a text column): "
                   "their own stratum, weight 0. A .jsonl line's \"description\" and \"narrative\" (the "
                   "query's information need) are passed on to the output.")
@click.option("--exclude", "exclude", multiple=True, type=click.Path(dir_okay=False),
              help="A query set to stay disjoint from (e.g. an earlier queries.jsonl); repeatable.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), help="Output JSONL, one query per line.")
@click.option("--dask", "dask_address", metavar="ADDRESS", default=None,
              help="Read and group the log on a Dask cluster: a scheduler (tcp://host:8786), or local[:N] for "
                   "N local worker processes. Same output as without, byte for byte.")
@domain_errors
@checked_paths(inputs=[("log", glob_files), "handwritten", "exclude"], outputs=["out"])
def sample_cmd(log, query_col, count_col, user_col, strata, shape, size, floor, seed, weighting, head, draw_key,
               handwritten, exclude, out, dask_address):
    """Sample a stratified query set from a search LOG (CSV, TSV, JSONL or Parquet; gzip too).

    LOG may be files, folders (a partitioned dataset: every log file under it) or quoted glob
    patterns. With --dask the files are read, normalised and grouped on a Dask cluster's workers.

    A row is one search (or --count-col searches). Queries are normalised (Unicode NFKC, case,
    white space, curly quotes) and collapsed to distinct queries with their traffic and
    distinct users. --size queries are allocated over the strata in proportion to traffic,
    each stratum getting at least --floor (or all it has), rounded so the total is exact; then
    drawn without replacement within each stratum. Each output row carries qid, text, stratum,
    traffic, users, stratum_share, inclusion, weight (what it stands for in a traffic-weighted
    mean: (traffic / total) / inclusion, Horvitz-Thompson), pii (flags for e-mail, phone and long
    digit runs, for a person to check), the stratum's known totals (stratum_traffic,
    stratum_size, stratum_drawn: golden stats compare divides by them; with --weighting uniform also
    stratum_traffic_sq and stratum_traffic_log, for its interval) and, with --user-col,
    user_weight and stratum_user_share (for golden stats compare --unit user).
    Several LOG files are read as one log. Same inputs and --seed, same file, byte for byte.

    \b
    Example:
      golden sample queries searches.csv.gz --query-col query --user-col user_id \\
          --stratum market --shape --size 300 --floor 20 --seed 7 --out queries.jsonl
      golden sample queries logs/2026-11/ --query-col query --stratum market --size 300 \\
          --dask local:4 --out queries.jsonl
    """
    from curation.formats.fileio import InputError
    from curation.formats.queries import write_queries
    from curation.sample.sampling import sample_queries

    try:
        result = sample_queries(
            list(log), query_col=query_col, count_col=count_col, user_col=user_col, strata=strata, shape=shape,
            size=size, floor=floor, seed=seed, weighting=weighting, head=head, handwritten=handwritten,
            exclude=list(exclude), progress=True, dask=dask_address, draw_key=draw_key,
        )
    except InputError:
        raise
    except ValueError as exc:  # the library names its parameters; say them as options here
        raise click.ClickException(re.sub(r"\b(size|floor)\b", r"--\1", str(exc))) from None
    write_queries(result.rows, out)
    st = result.stats
    click.echo(
        f"read {st['log_rows']:,} log rows ({st['searches']:,} searches): {st['distinct']:,} distinct queries "
        f"in {sum(1 for s in result.strata if s.label != 'handwritten')} strata"
    )
    click.echo(format_strata_table(result.strata))
    extra = f" + {st['handwritten']} hand-written" if st["handwritten"] else ""
    pii = sum(1 for r in result.rows if r["pii"])
    design = weighting
    if weighting == "uniform":
        whole = sum(1 for r in result.rows if r["weight"] > 0 and r["inclusion"] >= 1)
        design += f", {whole} head queries taken whole" if head == "certain" else ", head drawn"
    click.echo(f"wrote {st['size']:,} queries{extra} to {out} (seed {seed}, draw key {st['draw_key']}, "
               f"weighting {design}; "
               f"{pii} flagged as possible personal data)")
    for warning in result.warnings:
        click.echo(f"warning: {warning}", err=True)
