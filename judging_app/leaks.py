"""Leads' leak review: each query's leak status with its matching chunks in context, and the
decision on each chunk, on a selection of chunks or on a whole query at once.

A view parses the form, calls :mod:`curation.leak.findings` and renders; the query's section is its own
template (``leaks/_query.html``), which the page includes and htmx swaps after a decision. Corpus
text and query text are rendered escaped (Jinja autoescaping), never as HTML. Every finding starts
undecided: no decision is pre-selected. The page filters by mode and score and pages through the
flagged queries; the filter travels in the query string, also of the decision forms, so a swapped
section keeps it.
"""

from __future__ import annotations

from flask import Blueprint, abort, flash, g, redirect, render_template, request, url_for

from curation.leak import findings as leaks
from curation.leak.report import MODES

from .auth import lead_required, project_or_404
from .db import get_db
from .errors import finite_float, is_htmx, store_int, whole_number

bp = Blueprint("leaks", __name__, url_prefix="/lead")
TOP_CHUNKS = 3  # chunks shown per query, best first, until the lead asks for all of them


def _filter() -> leaks.LeakFilter:
    """The page's filter from the query string (400 with the reason when a value is not valid)."""
    args = request.args
    try:
        return leaks.LeakFilter(
            mode=args.get("mode") or None, min_score=finite_float(args.get("min_score") or "0", "min_score"),
            show=args.get("show") or "all", page=whole_number(args.get("page") or "1"),
            per_page=whole_number(args.get("per_page") or "20"),
        )
    except ValueError as exc:
        abort(400, description=f"Filter: {exc}")


def _filter_args(flt: leaks.LeakFilter) -> dict:
    """The filter as query-string arguments (defaults left out), for links and form actions."""
    out = {}
    if flt.mode:
        out["mode"] = flt.mode
    if flt.min_score:
        out["min_score"] = f"{flt.min_score:g}"
    if flt.show != "all":
        out["show"] = flt.show
    if flt.page != 1:
        out["page"] = flt.page
    if flt.per_page != 20:
        out["per_page"] = flt.per_page
    return out


def _render_query(project, query, flt, *, show_all: bool = False, counters: bool = True):
    """One query's section after a decision, its chunks filtered as on the page (all of them with
    ``show_all``); with ``counters``, the page's counters too, swapped in place out of band."""
    kept = [c for c in query.chunks if flt.keeps(c)]
    q = leaks.QueryLeaks(query.qid, query.query_id, query.text, query.leak_status, query.status, kept,
                         hidden=len(query.chunks) - len(kept))
    html = render_template("leaks/_query.html", project=project, q=q, decisions=leaks.DECISIONS,
                           fargs=_filter_args(flt), show_all=show_all, top_chunks=TOP_CHUNKS)
    if counters:
        html += render_template("leaks/_counts.html", ov=leaks.leak_overview(get_db(), project, flt), oob=True)
    return html


@bp.get("/<int:project_id>/leaks/query/<int:query_id>")
@lead_required
def query_section(project_id: int, query_id: int):
    """One query's section with all its chunks (the "show all" of a query with many)."""
    project = project_or_404(project_id)
    flt = _filter()
    query = leaks.query_leaks(get_db(), project, query_id)
    if query is None:
        abort(404)
    if is_htmx():
        return _render_query(project, query, flt, show_all=True, counters=False)
    return redirect(url_for("leaks.index", project_id=project.id, all=query_id, **_filter_args(flt))
                    + f"#leakq-{query_id}")


@bp.get("/<int:project_id>/leaks")
@lead_required
def index(project_id: int):
    project = project_or_404(project_id)
    flt = _filter()
    overview = leaks.leak_overview(get_db(), project, flt)
    try:
        show_all = whole_number(request.args.get("all") or "0")
    except ValueError:
        show_all = 0
    return render_template("leaks/index.html", project=project, overview=overview, decisions=leaks.DECISIONS,
                           modes=MODES, fargs=_filter_args(flt), flt=flt, top_chunks=TOP_CHUNKS,
                           show_all_query=show_all)


def _done(project, queries, decision, flt, what: str):
    if is_htmx():
        return _render_query(project, queries[0], flt)
    flash(f"{what}: {leaks.DECISIONS[decision].lower()} — recorded.", "info")
    return redirect(url_for("leaks.index", project_id=project.id, **_filter_args(flt))
                    + f"#leakq-{queries[0].query_id}")


@bp.post("/<int:project_id>/leaks/<int:finding_id>")
@lead_required
def decide(project_id: int, finding_id: int):
    """Record the lead's decision on one (query, chunk); htmx gets the query's section back."""
    project = project_or_404(project_id)
    flt = _filter()
    decision = request.form.get("decision", "")
    if decision not in leaks.DECISIONS:
        abort(400, description="Choose one of the decisions in the list.")
    try:
        query = leaks.decide(get_db(), project, finding_id, decision, g.user)
    except LookupError:
        abort(404)
    return _done(project, [query], decision, flt, f"Query {query.qid}")


@bp.post("/<int:project_id>/leaks/query/<int:query_id>")
@lead_required
def decide_bulk(project_id: int, query_id: int):
    """One decision for the chunks ticked in a query's section (``scope=selected``) or for every
    chunk of the query (``scope=query``), recorded at once."""
    project = project_or_404(project_id)
    flt = _filter()
    form = request.form
    decision = form.get("decision", "")
    if decision not in leaks.DECISIONS:
        abort(400, description="Choose one of the decisions in the list.")
    scope = form.get("scope")
    db = get_db()
    try:
        if scope == "query":
            queries = [leaks.decide_query(db, project, query_id, decision, g.user)]
        elif scope == "selected":
            try:
                ids = [store_int(v) for v in form.getlist("finding")]
            except ValueError:
                abort(400, description="The selection is not a list of findings.")
            if not ids:
                abort(400, description="Tick the chunks to decide first (or apply to the whole query).")
            queries = leaks.decide_many(db, project, ids, decision, g.user, query_id=query_id)
        else:
            abort(400, description="Say whether the decision is for the selected chunks or the whole query.")
    except LookupError:
        abort(404)
    n = sum(1 for q in queries for c in q.chunks if c.decision == decision)
    return _done(project, queries, decision, flt, f"Query {queries[0].qid}, {n} chunks")
