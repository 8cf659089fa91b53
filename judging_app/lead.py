"""The lead's side: agreement on the overlap set, the adjudication queue, new guidelines versions
and releasing the held-back remainder of the pool.

Every view is for leads and admins only (:func:`judging_app.auth.lead_required`: anyone else gets
403). The numbers come from :func:`curation.agree.agreement.build_agreement_report` (the report
``golden labels agreement`` prints); the queue and decisions from :mod:`curation.agree.adjudication`; the
release from :func:`curation.judge.assignment.release`. The charts (confusion heatmap, drift, label
distributions) are inline SVG drawn here from those numbers: no
script library, no CDN, and no inline style (the app's CSP forbids it; SVG presentation
attributes are used instead).
"""

from __future__ import annotations

import math
from datetime import timedelta

from flask import Blueprint, abort, current_app, flash, g, redirect, render_template, request, url_for

from curation.agree import adjudication, known_pairs
from curation.agree.agreement import build_agreement_report
from curation.agree.measures import MEASURES, format_estimate
from curation.agree.release import ReleaseRefused, review_and_release
from curation.agree.settings import DEFAULT_THRESHOLDS, Thresholds
from curation.formats.limits import SizeLimitError
from curation.judge import assignment, gold
from curation.judge.progress import IDLE_AFTER, build_progress, format_duration
from curation.store import projects
from curation.store.models import Project, User

from .auth import lead_required, project_or_404
from .db import get_db
from .errors import finite_float, is_htmx, store_int, whole_number
from .judge import render_guidelines

bp = Blueprint("lead", __name__, url_prefix="/lead")
MAX_IDLE_MINUTES = 60 * 24 * 365  # ?idle= on the progress page: up to a year (a larger one overflows a timedelta)


@bp.app_context_processor
def _lead_links() -> dict:
    """For the lead navigation on every lead page (lead/_nav.html, also the leak check's and the
    versions' pages): whether the leak check is there, the open counts of the two queues, and the
    one count of work (:func:`curation.store.workload.count_work`) for the pages that show it."""
    def open_counts(project: Project, counts=None) -> dict:
        """``counts``: the two queues' counts when the page read them already."""
        queue, unsure = counts or adjudication.open_queues(get_db(), project)
        return {"disagreements": queue.open, "unsure": unsure.open}

    def work(project: Project):
        from curation.store import workload

        return workload.project_work(workload.count_work(get_db(), project.id,
                                                         visible=assignment.main_visible(project)))

    return {"has_leaks": "leaks.index" in current_app.view_functions, "lead_open_counts": open_counts,
            "project_work": work}


# ------------------------------------------------------------------------------ presentation helpers


def fmt(est, percent: bool = False) -> str:
    """An estimate for a table cell: the value, or "undefined" (the reason goes in a title)."""
    if est is None or not est.defined:
        return "undefined"
    return f"{100 * est.value:.1f}%" if percent else f"{est.value:.3f}"


def fmt_interval(est, percent: bool = False) -> str:
    if est is None or not est.defined or est.low is None:
        return ""
    if percent:
        return f"[{100 * est.low:.1f}, {100 * est.high:.1f}]"
    return f"[{est.low:.3f}, {est.high:.3f}]"


def _blend(t: float) -> str:
    """A colour from pale to the accent teal for t in [0, 1] (sequential, readable when printed)."""
    lo, hi = (0xF4, 0xF7, 0xF6), (0x1D, 0x5C, 0x60)
    t = min(max(t, 0.0), 1.0)
    return "#" + "".join(f"{round(a + (b - a) * t):02x}" for a, b in zip(lo, hi))


def heatmap(confusion: list[list[int]], scale: list[int], judges: tuple[str, str], *, cell: int = 46) -> dict:
    """Cells of a confusion-matrix heatmap: rows = first judge's grade, columns = second's; the
    shade is the count over the largest count; diagonal cells (agreement) are outlined."""
    k = len(scale)
    top = max((n for row in confusion for n in row), default=0) or 1
    margin = 40
    cells = []
    for i, row in enumerate(confusion):
        for j, n in enumerate(row):
            t = n / top
            cells.append(dict(x=margin + j * cell, y=margin + i * cell, n=n, fill=_blend(math.sqrt(t)),
                              ink="#ffffff" if math.sqrt(t) > 0.55 else "#1f2328", diag=i == j,
                              label=f"{judges[0]} {scale[i]}, {judges[1]} {scale[j]}: {n} pairs"))
    size = margin + k * cell + 8
    return dict(cells=cells, cell=cell, margin=margin, width=size, height=size, scale=scale, judges=judges, k=k)


def drift_chart(points, thresholds: Thresholds, *, width: int = 560, height: int = 180) -> dict | None:
    """Polylines of the rolling and cumulative agreement against the number of completed pairs,
    with the verdict thresholds as dashed lines."""
    if not points:
        return None
    left, right, top, bottom = 40, 10, 10, 24
    n = max(p.index for p in points)
    span = max(n - 1, 1)

    def x(i):
        return left + (width - left - right) * ((i - 1) / span if n > 1 else 0.5)

    def y(v):
        return top + (height - top - bottom) * (1.0 - v)

    rolling = " ".join(f"{x(p.index):.1f},{y(p.agreement):.1f}" for p in points)
    cumulative = " ".join(f"{x(p.index):.1f},{y(p.cumulative):.1f}" for p in points)
    lines = [dict(y=y(v), label=f"{100 * v:.0f}%") for v in (thresholds.usable, thresholds.marginal)]
    ticks = [dict(y=y(v), label=f"{100 * v:.0f}%") for v in (0.0, 0.5, 1.0)]
    return dict(width=width, height=height, rolling=rolling, cumulative=cumulative, lines=lines, ticks=ticks,
                left=left, right=width - right, bottom=height - bottom, n=n, window=points[-1].window,
                last=points[-1])


GRADE_COLOURS = ("#d9d4c7", "#9cc5c7", "#4f9498", "#1d5c60", "#0d3a3d", "#062022", "#000000")


def distribution_bars(distributions: dict, scale: list[int], *, width: int = 360) -> list[dict]:
    """One stacked bar per judge: the share of each grade among their labels."""
    out = []
    for judge, dist in distributions.items():
        total = sum(dist.values())
        x = 0.0
        parts = []
        for idx, grade in enumerate(scale):
            n = dist.get(grade, 0)
            w = width * n / total if total else 0.0
            parts.append(dict(x=x, w=w, n=n, grade=grade, share=(n / total if total else 0.0),
                              fill=GRADE_COLOURS[min(idx, len(GRADE_COLOURS) - 1)]))
            x += w
        out.append(dict(judge=judge, total=total, parts=parts))
    return out


def progress_bars(judges, *, width: int = 360) -> dict:
    """One bar per judge: done, open (could judge now) and held pairs, on one scale (the largest
    queue is ``width`` wide), so a lagging or overloaded judge shows at once."""
    top = max((j.assigned for j in judges), default=0) or 1
    rows = []
    for i, j in enumerate(judges):
        parts, x = [], 0.0
        for kind, n, fill in (("done", j.done, "#1d5c60"), ("open", j.remaining - j.held, "#9cc5c7"),
                              ("held", j.held, "#d9d4c7")):
            w = width * n / top
            parts.append(dict(kind=kind, n=n, x=x, w=w, fill=fill))
            x += w
        rows.append(dict(judge=j.judge, y=i * 28 + 4, parts=parts, idle=j.idle, assigned=j.assigned))
    return dict(rows=rows, width=width, height=len(judges) * 28 + 8)


def hourly_columns(hourly: list[int], *, width: int = 560, height: int = 150) -> dict:
    """Columns of the team's answers per hour over the last day (oldest left, this hour right)."""
    left, bottom_pad, top_pad = 36, 22, 10
    top = max(hourly, default=0) or 1
    n = len(hourly) or 1
    step = (width - left - 4) / n
    plot = height - bottom_pad - top_pad
    cols = []
    for i, count in enumerate(hourly):
        h = plot * count / top
        ago = n - 1 - i
        cols.append(dict(x=left + i * step + 1, y=top_pad + plot - h, w=max(step - 2, 1), h=h, n=count,
                         label=f"{count} answers {'in the current hour' if ago == 0 else f'{ago} h ago'}"))
    return dict(cols=cols, width=width, height=height, left=left, base=top_pad + plot, top=top, top_y=top_pad)


def _float_arg(name: str, default: float) -> float:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = finite_float(raw, name)
    except ValueError:
        abort(400, description=f"{name} must be a number between 0 and 1.")
    if value > 1.0:
        value /= 100.0  # "70" means 70%
    return value


def _report(project: Project, disagreements=None):
    """The project's agreement report (:func:`curation.agree.agreement.build_agreement_report`, as
    ``golden labels agreement`` prints it) with the cut and thresholds of the page's settings form."""
    try:
        thresholds = Thresholds(usable=_float_arg("usable", DEFAULT_THRESHOLDS.usable),
                                marginal=_float_arg("marginal", DEFAULT_THRESHOLDS.marginal))
        cut = request.args.get("cut") or None
        return build_agreement_report(get_db(), project, cut=whole_number(cut) if cut else None, thresholds=thresholds,
                                      disagreements=disagreements)
    except ValueError as exc:
        abort(400, description=str(exc))


# ------------------------------------------------------------------------------------------- views


@bp.get("/")
@lead_required
def index():
    """The projects a lead can review (straight to the dashboard when there is one)."""
    rows = projects.list_projects(get_db())
    if len(rows) == 1:
        return redirect(url_for("lead.dashboard", project_id=rows[0].id))
    return render_template("lead/index.html", projects=rows)


@bp.get("/<int:project_id>")
@lead_required
def dashboard(project_id: int):
    project = project_or_404(project_id)
    db = get_db()
    # The two queues' counts, read once for the report, the suggested next step and the navigation.
    counts = adjudication.open_queues(db, project)
    report = _report(project, counts[0])
    released_by = db.get(User, project.released_by_id) if project.released_by_id else None
    queue = report.disagreements
    held = project.hold_main and project.released_at is None
    summary = assignment.queue_summary(db, project)
    main_pairs = sum(v.get("main", 0) for v in summary.values())
    return render_template(
        "lead/dashboard.html", project=project, report=report, measures=MEASURES, fmt=fmt, fmt_interval=fmt_interval,
        format_estimate=format_estimate, heatmaps=[
            (c, heatmap(c.confusion, report.scale, c.judges)) for c in report.pairwise if c.confusion is not None
        ],
        bin_heatmaps=[(c, heatmap(c.binary_confusion, [0, 1], c.judges)) for c in report.pairwise
                      if c.binary_confusion is not None],
        drift=drift_chart(report.drift, report.verdict.thresholds),
        bars=distribution_bars(report.distributions, report.scale), queue=queue, held=held,
        released_by=released_by, main_pairs=main_pairs, grades=projects.grades(project),
        guidelines=projects.current_guidelines(db, project), lead_counts=counts,
        next_action=_next_action(project, queue.open, counts[1].open, held),
        next_version=_next_version_name(project),
    )


def _next_version_name(project: Project) -> str:
    """The name the Export form suggests: v1, v2, ... after the versions the project has."""
    from curation.export.versions import list_versions

    return f"v{len(list_versions(get_db(), project)) + 1}"


def _next_action(project: Project, disagreements: int, unsure_open: int, held: bool) -> dict:
    """The one thing the dashboard suggests a lead does next: the open disagreements, then the
    unsure answers, then the release of held work, then the judging left, else an export."""
    from curation.store import workload

    db = get_db()
    if disagreements:
        return dict(text=f"{disagreements} disagreement{'s' if disagreements != 1 else ''}", label="start",
                    url=url_for("lead.queue", project_id=project.id))
    if unsure_open:
        return dict(text=f"{unsure_open} unsure answer{'s' if unsure_open != 1 else ''}", label="review",
                    url=url_for("lead.unsure", project_id=project.id))
    if held:
        return dict(text="main pairs are held back until you review agreement", label="review and release",
                    url="#release")
    left = workload.project_work(workload.count_work(db, project.id, visible=assignment.main_visible(project)))
    if left.remaining:
        return dict(text=f"{left.remaining} answers to go", label="see progress",
                    url=url_for("lead.progress", project_id=project.id))
    return dict(text="everything assigned is judged and adjudicated", label="export a version",
                url=url_for("lead.dashboard", project_id=project.id) + "#export")


@bp.post("/<int:project_id>/export")
@lead_required
def export(project_id: int):
    """The dashboard's Export button: a new version made by the function and checks of ``golden
    export create`` (:func:`curation.export.versions.export_version`, which stores the version and
    records it in the audit trail), then its summary (:func:`curation.export.versions.result_lines`).
    The folder it writes is temporary: the version lives in the store (the Versions page)."""
    import shutil
    import tempfile

    from curation.export.versions import ExportBlocked, export_version, result_lines

    project = project_or_404(project_id)
    form = request.form
    version = (form.get("version") or "").strip()
    out = tempfile.mkdtemp(prefix="golden-export-")
    try:
        res = export_version(get_db(), project, version, policy=form.get("policy") or "adjudicated", out_dir=out,
                             allow_incomplete=form.get("allow_incomplete") == "yes", created_by=g.user.name)
    except ExportBlocked as exc:
        flash(f"Not exported: {exc} Tick \"export anyway\" to export what is judged.", "error")
        return redirect(url_for("lead.dashboard", project_id=project.id) + "#export")
    except ValueError as exc:
        flash(f"Not exported: {exc}", "error")
        return redirect(url_for("lead.dashboard", project_id=project.id) + "#export")
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return render_template("lead/exported.html", project=project, res=res,
                           lines=result_lines(res, where="the store (download it from the Versions page)"))


@bp.get("/<int:project_id>/progress")
@lead_required
def progress(project_id: int):
    """Where the judging stands (:func:`curation.judge.progress.build_progress`, as ``golden
    progress`` prints it); ``?idle=MINUTES`` sets when a judge is marked idle."""
    project = project_or_404(project_id)
    raw = request.args.get("idle") or None
    try:
        idle = whole_number(raw) if raw else None
    except ValueError:
        idle = 0
    if idle is not None and not 1 <= idle <= MAX_IDLE_MINUTES:
        abort(400, description=f"idle must be a whole number of minutes, from 1 to {MAX_IDLE_MINUTES}.")
    idle_after = timedelta(minutes=idle) if idle else IDLE_AFTER
    gold.apply_holds(get_db(), project)  # a judge newly below the bar is held now, when the project asks for it
    report = build_progress(get_db(), project, idle_after=idle_after)
    return render_template("lead/progress.html", project=project, report=report, bars=progress_bars(report.judges),
                           hourly=hourly_columns(report.hourly), idle_minutes=int(idle_after.total_seconds() // 60),
                           duration=format_duration)


@bp.post("/<int:project_id>/progress/release-hold")
@lead_required
def release_hold(project_id: int):
    """Release a judge held for falling below the known-answer bar (recorded: who, when)."""
    project = project_or_404(project_id)
    judge = get_db().get(User, request.form.get("judge", type=store_int) or -1)
    if judge is None:
        abort(400, description="The form lacks the judge.")
    try:
        gold.release_hold(get_db(), project, judge, g.user)
    except ValueError as exc:
        abort(409, description=str(exc))
    flash(f"{judge.name}'s queue released: they see their pairs again.", "info")
    return redirect(url_for("lead.progress", project_id=project.id), code=303)


@bp.post("/<int:project_id>/release")
@lead_required
def release(project_id: int):
    """Release the held-back main pairs, recording the lead and the agreement the verdict read
    (:func:`curation.agree.release.review_and_release`, as ``golden judging release``). Against a verdict
    other than "usable" the form must carry ``confirm`` and a ``reason``, which is recorded."""
    project = project_or_404(project_id)
    report = _report(project)
    try:
        record = review_and_release(get_db(), project, g.user, report=report,
                                    force=request.form.get("confirm") == "yes", reason=request.form.get("reason"))
    except ReleaseRefused:
        flash(f"Not released: the verdict is {report.verdict.band}. Tick the box and say why to release anyway.",
              "error")
        return redirect(url_for("lead.dashboard", project_id=project.id))
    except ValueError as exc:
        abort(400, description=str(exc))
    at = "" if record.agreement is None else f" at agreement {100 * record.agreement:.1f}%"
    flash(f"Released {record.main_pairs} main pairs to the judges (by {record.lead}{at}).", "info")
    return redirect(url_for("lead.dashboard", project_id=project.id))


@bp.get("/<int:project_id>/comparisons")
@lead_required
def comparisons(project_id: int):
    """The Comparisons panel (an htmx fragment of the dashboard): the report of `golden decisive settle`."""
    from curation.machine.guide import guided_settlement_report
    from curation.machine.labels import list_machines

    project = project_or_404(project_id)
    try:
        rep = guided_settlement_report(get_db(), project)
    except ValueError:  # no comparison recorded for this project
        rep = None
    return render_template("lead/_comparisons.html", project=project, rep=rep,
                           machines=list_machines(get_db(), project))


@bp.post("/<int:project_id>/comparisons/machine")
@lead_required
def comparisons_machine(project_id: int):
    """The setting: which machine judge guides the decisive order (or none: the blind order). It
    applies when the order is next recomputed (`golden judging assign --order decisive`)."""
    from curation.machine.guide import set_guide_machine

    project = project_or_404(project_id)
    name = (request.form.get("machine") or "").strip()
    db = get_db()
    try:
        set_guide_machine(db, project, name or None)
    except ValueError as exc:
        abort(400, description=str(exc))
    db.commit()
    flash(f"The decisive order is now {'guided by machine judge ' + name if name else 'blind (no machine judge)'}"
          f" (by {g.user.name}); it applies when the order is next recomputed.", "info")
    return redirect(url_for("lead.dashboard", project_id=project.id))


@bp.post("/<int:project_id>/comparisons/release")
@lead_required
def release_comparison(project_id: int):
    """Release the judges from the pairs no open comparison needs, once one is settled (recorded)."""
    from curation.evaluate import decisive

    project = project_or_404(project_id)
    try:
        n = decisive.release_settled(get_db(), project, g.user, request.form.get("compare", ""))
    except ValueError as exc:
        abort(400, description=str(exc))
    flash(f"Judges released from {n} queued pairs that no open comparison needs (by {g.user.name}).", "info")
    return redirect(url_for("lead.dashboard", project_id=project.id))


def _queue_context(project: Project, *, pair_id: int | None = None, error: str | None = None, form=None):
    db = get_db()
    current = adjudication.disagreement(db, project, pair_id) if pair_id is not None else None
    if current is None or current.resolved:
        first = adjudication.disagreements(db, project, limit=1)
        current = first[0] if first else None
    counts = adjudication.queue_counts(db, project)
    gv = projects.current_guidelines(db, project)
    return dict(project=project, item=current, remaining=counts.open, counts=counts, grades=projects.grades(project),
                guidelines=gv, guidelines_html=render_guidelines(gv.text if gv else ""), error=error, form=form or {})


@bp.get("/<int:project_id>/adjudicate")
@lead_required
def queue(project_id: int):
    project = project_or_404(project_id)
    context = _queue_context(project, pair_id=request.args.get("pair", type=store_int))
    if is_htmx():
        return render_template("lead/_adjudication.html", **context)
    return render_template("lead/adjudicate.html", **context)


@bp.post("/<int:project_id>/adjudicate")
@lead_required
def decide(project_id: int):
    """Record the lead's final grade (with a reason when the lead gives one); show the next
    disagreement (htmx: the partial)."""
    project = project_or_404(project_id)
    form = request.form

    def record(pair_id: int, grade: str) -> None:
        adjudication.adjudicate(get_db(), project, pair_id=pair_id, lead=g.user, grade=grade,
                                reason=form.get("reason", ""), guidelines_issue=form.get("guidelines_issue") == "yes")
        if form.get("known_answer") == "yes":  # also a known-answer pair, with this grade and reason
            known_pairs.mark_adjudicated(get_db(), project, pair_id, lead=g.user)

    return _decision(project, record, _queue_context, "lead.queue", "lead/_adjudication.html", "lead/adjudicate.html")


def _decision(project: Project, record, context_of, endpoint: str, partial: str, page: str):
    """A lead's decision from one of the two queues (disagreements, unsure answers): ``record(pair_id,
    grade)`` stores it (ValueError: refused, shown in place with the form as sent); then the next item
    (htmx: the partial), or without htmx a redirect back to ``endpoint``."""
    form = request.form
    pair_id = form.get("pair_id", type=store_int)
    grade = form.get("grade", "").strip()
    if pair_id is None:
        abort(400, description="The form lacks the pair.")
    error = None
    if not grade:
        error = "choose the final grade first (press its digit)"
    elif not _grade_shaped(grade):
        error = f"{grade[:30]!r} is not a grade of the project's scale"
    else:
        try:
            record(pair_id, grade)
        except ValueError as exc:
            error = str(exc).split(": ", 1)[-1]
    if error is None and not is_htmx():
        flash("Final label recorded.", "info")
        return redirect(url_for(endpoint, project_id=project.id))
    context = context_of(project, pair_id=pair_id if error else None, error=error, form=dict(form) if error else None)
    return render_template(partial if is_htmx() else page, **context), (422 if error else 200)


def _grade_shaped(grade: str) -> bool:
    """Whether a decision's grade is written as a grade can be: at most 9 characters, signs then
    ASCII digits (the scale itself is checked when the decision is recorded)."""
    try:
        whole_number(grade.lstrip("+-"))
    except ValueError:
        return False
    return len(grade) <= 9


@bp.post("/<int:project_id>/guidelines")
@lead_required
def new_guidelines(project_id: int):
    """Write a new guidelines version from the adjudication screen."""
    project = project_or_404(project_id)
    text = request.form.get("text", "")
    note = (request.form.get("note") or "").strip() or None
    try:
        version, is_new = adjudication.open_guidelines_version(get_db(), project, lead=g.user, text=text, note=note)
    except ValueError as exc:
        abort(413 if isinstance(exc, SizeLimitError) else 400, description=str(exc).split(": ", 1)[-1])
    if is_new:
        flash(f"Guidelines version {version.version} is in force; new judgments record it.", "info")
    else:
        flash(f"The text is the same as version {version.version}: nothing changed.", "info")
    back = request.form.get("back", type=store_int)
    return redirect(url_for("lead.queue", project_id=project.id, pair=back) if back else
                    url_for("lead.queue", project_id=project.id))


# -------------------------------------------------------------------------------------- unsure answers


def _unsure_context(project: Project, *, pair_id: int | None = None, error: str | None = None, form=None):
    db = get_db()
    current = adjudication.unsure_answer(db, project, pair_id) if pair_id is not None else None
    if current is None or current.resolved:
        first = adjudication.unsure_answers(db, project, limit=1)
        current = first[0] if first else None
    counts = adjudication.unsure_counts(db, project)
    return dict(project=project, item=current, counts=counts, grades=projects.grades(project), error=error,
                form=form or {}, guidelines=projects.current_guidelines(db, project),
                disagreements=adjudication.queue_counts(db, project))


@bp.get("/<int:project_id>/unsure")
@lead_required
def unsure(project_id: int):
    """The "Unsure answers" queue: pairs a judge answered with a grade but marked unsure."""
    project = project_or_404(project_id)
    context = _unsure_context(project, pair_id=request.args.get("pair", type=store_int))
    return render_template("lead/_unsure.html" if is_htmx() else "lead/unsure.html", **context)


@bp.post("/<int:project_id>/unsure")
@lead_required
def decide_unsure(project_id: int):
    """Confirm or change an unsure answer's grade (:func:`curation.agree.adjudication.resolve_unsure`)."""
    project = project_or_404(project_id)

    def record(pair_id: int, grade: str) -> None:
        adjudication.resolve_unsure(get_db(), project, pair_id=pair_id, lead=g.user, grade=grade,
                                    reason=request.form.get("reason", ""))

    return _decision(project, record, _unsure_context, "lead.unsure", "lead/_unsure.html", "lead/unsure.html")


# ------------------------------------------------------------------------ information need per query


@bp.context_processor
def _need_helpers() -> dict:
    """``query_need(project, qid)`` for the need form on the adjudication screens (lead/_need.html), and
    ``unsure_open(project)`` for the count beside the "Unsure answers" links."""
    from curation.store import needs

    return {"query_need": lambda project, qid: needs.current_need(get_db(), project, qid),
            "unsure_open": lambda project: adjudication.unsure_counts(get_db(), project).open}


@bp.post("/<int:project_id>/need")
@lead_required
def write_need(project_id: int):
    """Write a query's information need (:func:`curation.store.needs.set_need`, a new version), then
    go back to the screen the form was on."""
    from curation.store import needs

    project = project_or_404(project_id)
    form = request.form
    try:
        need, is_new = needs.set_need(get_db(), project, form.get("qid", ""), lead=g.user,
                                      description=form.get("description"), narrative=form.get("narrative"),
                                      note=form.get("note"))
    except ValueError as exc:
        abort(413 if isinstance(exc, SizeLimitError) else 400, description=str(exc).split(": ", 1)[-1])
    if is_new:
        flash(f"Information need of {need.qid}: version {need.version} is in force; new judgments record it.", "info")
    else:
        flash(f"The information need of {need.qid} is unchanged (version {need.version}).", "info")
    back = "lead.unsure" if form.get("back") == "unsure" else "lead.queue"
    return redirect(url_for(back, project_id=project.id, pair=form.get("pair", type=store_int)))
@bp.app_template_global("machine_judges")
def _machine_judges(project: Project) -> list[str]:
    """The names of ``project``'s machine judges, for the dashboard's link to their panel."""
    from curation.machine.labels import list_machines

    return list_machines(get_db(), project)


@bp.get("/<int:project_id>/machines")
@lead_required
def machines(project_id: int):
    """The "Machine judges" panel: one machine judge's calibration against the human labels
    (:func:`curation.machine.calibrate.build_calibration_report`, the report of `golden labels calibrate`),
    ``?machine=NAME`` choosing among the project's machine judges."""
    from curation.machine.calibrate import build_calibration_report
    from curation.machine.labels import list_machines

    project = project_or_404(project_id)
    db = get_db()
    names = list_machines(db, project)
    chosen = request.args.get("machine") or (names[0] if names else None)
    if chosen is not None and chosen not in names:
        abort(404)
    report = build_calibration_report(db, project, chosen).as_dict() if chosen else None
    from curation.machine.runs import runs_overview

    runs = runs_overview(db, project)  # the runs golden made itself (`golden machine runs`), stale labels
    return render_template("lead/machines.html", project=project, machines=names, chosen=chosen, r=report,
                           runs=runs)
