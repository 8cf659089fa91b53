"""The judging page: one pair at a time, keyboard first, htmx swapping in the next pair.

Every view goes through :func:`_own_project_or_404` (the project must be one of the judge's) and calls
:mod:`curation.judge.judging`, which only ever reads or writes the logged-in judge's own assignments and
returns records free of provenance and of other judges' labels. A request for anything else gets a
404 that says nothing about what exists.

Answers are POSTed to one endpoint with the one-time token of the pair on screen, so a double
click or a resubmitted form records one judgment. Without htmx the endpoint redirects back to the
page (post/redirect/get); with htmx it returns the partial for the next pair.
"""

from __future__ import annotations

import functools
import logging
import time
from datetime import timedelta

from flask import Blueprint, abort, current_app, flash, g, make_response, redirect, render_template, request, url_for
from markdown_it import MarkdownIt  # markdown-it-py, "js-default": raw HTML off, unsafe links refused
from markupsafe import Markup, escape

from curation.formats.guidelines import without_grades_section
from curation.judge import highlight, judging
from curation.judge.progress import format_duration
from curation.store import projects, roles

from . import qualification
from .auth import login_required, project_or_404
from .db import engine, get_db
from .errors import is_htmx, store_int, whole_number
from .tokens import signed_at

bp = Blueprint("judge", __name__, url_prefix="/projects")


@bp.teardown_request
def _end_reads(exc: BaseException | None) -> None:
    """After a judging request that went through, end the transaction its last reads opened
    (:func:`curation.judge.judging.end_reads`) before the connection is closed; a request that
    failed, or that left changes in its session, is rolled back as the connection closes."""
    db = g.get("db")
    if exc is None and db is not None and not (db.new or db.dirty or db.deleted):
        judging.end_reads(db)

_markdown = MarkdownIt("js-default")


def render_guidelines(text: str | None) -> Markup:
    """The guidelines as HTML from a safe Markdown subset: raw HTML in the text is escaped, and
    links with javascript:/data: schemes are not made links (markdown-it-py's js-default preset).
    Their "Grades" section is left out: the pages show the project's scale (the one definition,
    taken from that section) as a table in its place."""
    return Markup(_markdown.render(without_grades_section(text or "")))


def marked(pieces: list[tuple[str, bool]]) -> Markup:
    """The pieces of :func:`curation.judge.highlight.mark` as HTML: every piece of the untrusted text
    escaped (markupsafe), only the ``<mark>`` around a matching word is markup. Built in Python:
    a Jinja macro looping over a document's words was a tenth of rendering the pair."""
    return Markup("".join([f'<mark class="q">{escape(piece)}</mark>' if hit else escape(piece)
                           for piece, hit in pieces]))


#: The longest text (characters) whose marked HTML is kept: 512 entries of at most this size, text
#: and HTML, stay within a few tens of MB a worker however long a corpus's documents are.
MARKED_CACHE_TEXT = 16_384


def _marked(text: str | None, terms: frozenset[str]) -> Markup:
    """:func:`marked` of ``text`` with the words of ``terms`` marked; texts up to
    :data:`MARKED_CACHE_TEXT` characters are kept for the last 512 texts and queries shown in this
    process (a pair's title and document are the same HTML every time the pair is shown: to each
    judge of an overlap pair, on going back, after an undo). Keyed by the text itself, so a changed
    document can never be shown from the cache."""
    if text is not None and len(text) > MARKED_CACHE_TEXT:
        return marked(highlight.mark(text, terms))
    return _marked_kept(text, terms)


@functools.lru_cache(maxsize=512)
def _marked_kept(text: str | None, terms: frozenset[str]) -> Markup:
    return marked(highlight.mark(text, terms))


def grade_buttons(env, which: str, grades: tuple, current: int | None = None) -> Markup:
    """The grade buttons of ``judge/_grade_buttons.html`` (its macro ``which``: ``answer``, the
    answer bar, with the judge's earlier grade ``current`` marked; or ``unsure``) for ``grades``.
    They depend on nothing else, so each is rendered once per scale in this process and kept (the
    last 64); ``env`` is the app's Jinja environment, whose autoescaping prints the grades' names
    and descriptions. Templates are read afresh while Jinja reloads them (``auto_reload``)."""
    if env.auto_reload:
        return _grade_buttons(env, which, grades, current)
    return _kept_grade_buttons(env, which, grades, current)


def _grade_buttons(env, which: str, grades: tuple, current: int | None) -> Markup:
    macro = getattr(env.get_template("judge/_grade_buttons.html").module, which)
    return Markup(macro(grades, current) if which == "answer" else macro(grades))


_kept_grade_buttons = functools.lru_cache(maxsize=64)(_grade_buttons)


_URLS: dict[tuple[str, int], dict[str, str]] = {}


def cached_urls(script_root: str, project_id: int) -> dict[str, str] | None:
    """The project's judging URLs when :func:`_urls` has built them in this process, else None."""
    return _URLS.get((script_root, project_id))


def _urls(project_id: int) -> dict[str, str]:
    """The judging page's own URLs for a project (``judge`` serves the page and takes the answers,
    ``?before=N`` is its back link; ``guidelines``), built with url_for once per project and
    script root in each process rather than three times for every answer."""
    key = (request.script_root, project_id)
    urls = _URLS.get(key)
    if urls is None:
        if len(_URLS) > 1000:
            _URLS.clear()
        urls = _URLS[key] = {"judge": url_for("judge.page", project_id=project_id),
                             "guidelines": url_for("judge.guidelines", project_id=project_id)}
    return urls


def _own_project_or_404(project_id: int):
    """The project, when the logged-in user has work in it; else 404 (nothing is revealed), or for a
    lead, who may see every project, a page that says so and links to the project's lead pages."""
    project = judging.judge_project(get_db(), g.user, project_id)
    if project is None:
        if roles.is_lead(g.user) and request.method == "GET" and not is_htmx() \
                and "lead.dashboard" in current_app.view_functions:
            lead_project = project_or_404(project_id)
            abort(make_response(render_template("judge/not_judging.html", project=lead_project), 200))
        abort(404)
    return project


def _stale_after(config=None) -> timedelta:
    config = config or current_app.config
    return timedelta(seconds=config.get("CLAIM_TIMEOUT_SECONDS") or 0) or judging.DEFAULT_STALE_AFTER


def _min_seconds(config=None) -> float:
    """The server's minimum answer time (``MIN_ANSWER_MS``), for a project without its own."""
    return ((config or current_app.config).get("MIN_ANSWER_MS") or 0) / 1000


def min_answer_ms(project, config=None) -> int:
    """The minimum answer time in force in ``project``: its own (``min_answer_ms``, set by a lead)
    when it has one, else the server's ``MIN_ANSWER_MS`` (of ``config``, default the app's)."""
    own = getattr(project, "min_answer_ms", None)
    return own if own is not None else ((config or current_app.config).get("MIN_ANSWER_MS") or 0)


def _task_at(project, position: int | None):
    """The judge's own pair at ``position``, or None when there is none they may see."""
    if position is None:
        return None
    try:
        return judging.task_at(get_db(), project, g.user, position)
    except judging.AccessDenied:
        return None


def pair_context(project, task, *, note: str | None, progress, last: dict | None, config) -> dict:
    """What ``judge/_pair.html`` shows (with the judge's ``g.user`` and ``csrf_token()``): the one
    definition for the page, the htmx answer and the lean answer (:mod:`judging_app.lean`)."""
    terms = highlight.query_terms(task.query_text) if task else frozenset()
    grades = projects.grades(project)
    if last is not None and last["grade"] is not None:
        last = dict(last, grade=next((x for x in grades if x.grade == last["grade"]), None))
    return dict(
        project=project,
        task=task,
        marks=dict(title=_marked(task.doc_title, terms), text=_marked(task.doc_text, terms)) if task else None,
        grades=grades,
        progress=progress,
        format_duration=format_duration,
        note=note,
        last=last,
        urls=None,
        min_ms=min_answer_ms(project, config),
    )


def _render(project, task, *, note: str | None = None, progress=None, last: dict | None = None):
    """The judging page, or only its swappable part for an htmx request (one template serves both:
    the page includes the partial); ``progress`` when the caller has read it already; ``last``: the
    answer just recorded (the "Last:" line and its undo)."""
    db = get_db()
    context = pair_context(project, task, note=note, progress=progress or judging.progress(db, project, g.user),
                           last=last, config=current_app.config)
    context["urls"] = _urls(project.id)
    if is_htmx():
        return render_template("judge/_pair.html", **context)
    guidelines = projects.current_guidelines(db, project)
    return render_template(
        "judge/page.html",
        guidelines=render_guidelines(guidelines.text if guidelines else ""),
        guidelines_version=guidelines.version if guidelines else None,
        **context,
    )


@login_required
def index():
    """Where a user lands: their only project's judging page, the list of their projects, or (a
    lead with nothing to judge) the lead pages."""
    db = get_db()
    mine = judging.judge_projects(db, g.user)
    if not mine and roles.is_lead(g.user) and "lead.index" in current_app.view_functions:
        return redirect(url_for("lead.index"))
    if len(mine) == 1:
        return redirect(url_for("judge.page", project_id=mine[0].id))
    rows = [(p, judging.progress(db, p, g.user)) for p in mine]
    return render_template("judge/index.html", rows=rows)


@bp.get("/<int:project_id>/judge")
@login_required
def page(project_id: int):
    """The next pair to label; ``?at=N`` shows the judge's pair at queue position N (404 when it is
    not theirs) and ``?before=N`` the pair they answered before position N (the back key)."""
    project = _own_project_or_404(project_id)
    must_qualify = qualification.gate(project)  # no pair of the queue before the judge has qualified
    if must_qualify is not None:
        return must_qualify
    db = get_db()
    note = None
    if "at" in request.args:
        task = _task_at(project, request.args.get("at", type=store_int)) or abort(404)
    elif "before" in request.args:
        before = request.args.get("before", type=store_int)
        task = judging.previous_task(db, project, g.user, before=before)
        if task is None:  # nothing earlier: stay on the pair the judge was at
            note = "There is no earlier pair."
            task = _task_at(project, before) or judging.next_task(db, project, g.user, stale_after=_stale_after())
    else:
        task = judging.next_task(db, project, g.user, stale_after=_stale_after())
    return _render(project, task, note=note)


@bp.post("/<int:project_id>/judge")
@login_required
def answer(project_id: int):
    """Record the answer to the pair shown with ``token``: ``grade=N``, ``action=skip``, or
    ``action=unsure`` with the judge's best ``grade`` and an optional ``note``; then show the next pair.
    With htmx the project is checked with the token (one round trip), else first. The htmx answer
    usually takes the lean path (:mod:`judging_app.lean`), which shares :func:`answer_reply`,
    :func:`submit_htmx` and :func:`pair_context` with this view."""
    if is_htmx():
        project, task, progress, last, note = submit_htmx(get_db(), g.user, project_id, request.form.get("token", ""),
                                                          answer_reply(request.form), current_app.config)
        return htmx_answered(project_id, project, task, progress, last, note)
    project = _own_project_or_404(project_id)
    reply = answer_reply(request.form)
    note = None
    try:
        judging.submit(get_db(), g.user, request.form.get("token", ""), min_seconds=_min_seconds(), **reply)
    except judging.PairReassigned:
        note = REASSIGNED
    except Exception as exc:
        _refuse(exc)
    if note:
        flash(note, "info")
    return _after_answer(project, redirect(url_for("judge.page", project_id=project.id), code=303))


REASSIGNED = "That pair went to another judge after a long pause, so your answer was not recorded."


def answer_reply(form) -> dict:
    """The answer a form sends (``grade``, ``action``, ``note``) as :func:`judging.submit` takes it;
    400 when the grade is not a whole number."""
    action = form.get("action", "label")
    grade = form.get("grade", "").strip()
    try:
        if grade.startswith("-"):
            raise ValueError(grade)
        grade = whole_number(grade) if grade else None
    except ValueError:
        abort(400, description="The grade must be a number of the project's scale.")
    note_text = (form.get("note") or "").strip() if action == "unsure" else ""
    return dict(grade=grade, unsure=action == "unsure", note=note_text or None, skip=action == "skip")


def _refuse(exc: Exception):
    """The answer's refusals, the same for every path: 404, 409 (too soon), 400; anything else re-raised."""
    if isinstance(exc, judging.AccessDenied):
        abort(404)
    if isinstance(exc, judging.TooSoon):
        abort(409, description=f"That answer came {exc.seconds * 1000:.0f} ms after the pair appeared, too soon "
                               "to be for it (a key pressed twice?), so it was not recorded. Read the pair, "
                               "then answer again.")
    if isinstance(exc, ValueError):
        abort(400, description=str(exc))
    raise exc


def submit_htmx(db, user, project_id: int, token: str, reply: dict, config):
    """The htmx answer and the next pair together (one transaction, fewer round trips):
    ``(project, task, progress, last, note)``; ``note`` when the answer was not recorded (the pair
    was moved: the caller shows the next pair with it). Refusals as :func:`_refuse`."""
    try:
        answered = judging.submit_and_next(db, project_id, user, token, stale_after=_stale_after(config),
                                           min_seconds=_min_seconds(config), **reply)
    except judging.PairReassigned:
        return None, None, None, None, REASSIGNED
    except Exception as exc:
        _refuse(exc)
    return answered.project, answered.task, answered.progress, dict(reply, id=answered.result.judgment_id), None


def htmx_answered(project_id: int, project, task, progress, last, note):
    """The response to an htmx answer, in a request context: the next pair (with ``note`` when the
    answer was not recorded)."""
    if note:  # the answer was not recorded: the next pair still comes
        project = _own_project_or_404(project_id)
        task = judging.next_task(get_db(), project, g.user, stale_after=_stale_after())
    _keep_csrf_token()
    return _after_answer(project, make_response(_render(project, task, note=note, progress=progress, last=last)))


def _after_answer(project, response):
    """When the project holds judges found below the known-answer bar, check this judge once the
    response has gone out (``call_on_close``): after every answer alike, so the answer's timing
    says nothing of which pairs are known-answer ones. A judge newly held sees why on their next
    request."""
    if getattr(project, "known_answer_hold", False):
        response.call_on_close(hold_check(engine(), project.id, g.user.id))
    return response


def hold_check(bound_engine, project_id: int, judge_id: int):
    """The known-answer check of :func:`_after_answer`, to run once the response has gone out."""
    return functools.partial(_check_hold, bound_engine, project_id, judge_id)


def _check_hold(bound_engine, project_id: int, judge_id: int) -> None:
    from sqlmodel import Session

    from curation.judge import gold
    from curation.store.models import Project

    try:
        with Session(bound_engine) as session:
            proj = session.get(Project, project_id)
            if proj is not None:
                gold.apply_holds(session, proj, judge_id=judge_id)
    except Exception:  # a check after the response must never break the app
        logging.getLogger(__name__).exception("known-answer hold check failed")


@bp.get("/<int:project_id>/judge/released")
@login_required
def released(project_id: int):
    """Whether the held work is out yet, for the "come back later" screen's polling: 204 (nothing
    to swap) while it is held, else a notice with a link to the work. One prebuilt statement."""
    project = _own_project_or_404(project_id)
    if not judging.work_released(project):
        return "", 204
    return render_template("judge/_released.html", urls=_urls(project.id))


@bp.post("/<int:project_id>/judge/undo")
@login_required
def undo(project_id: int):
    """Undo the judge's last answer (``judgment``, the "Last:" line's): the pair is shown again."""
    project = _own_project_or_404(project_id)
    db = get_db()
    judgment_id = request.form.get("judgment", type=store_int)
    try:
        position = judging.undo_last(db, project, g.user, judgment_id)
    except judging.AccessDenied:
        abort(404)
    except (judging.PairReassigned, ValueError) as exc:
        abort(409, description=f"Not undone: {exc}.")
    if not is_htmx():
        flash("Your last answer was undone: answer the pair again.", "info")
        return redirect(url_for("judge.page", project_id=project.id, at=position), code=303)
    return _render(project, _task_at(project, position), note="Your last answer was undone: answer the pair again.")


def _keep_csrf_token() -> None:
    """Let the next pair's forms carry the CSRF token this answer was just checked with
    (flask-wtf's ``generate_csrf`` returns ``g.csrf_token`` when set) instead of signing a new one
    for every answer, while :func:`csrf_token_kept`."""
    if not g.get("csrf_valid"):
        return
    token = request.form.get("csrf_token", "")
    if csrf_token_kept(token, current_app.config):
        g.csrf_token = token


def csrf_token_kept(token: str, config) -> bool:
    """Whether the next pair's forms may carry ``token``, a CSRF token this answer was just checked
    with: while it is younger than half its time limit. It is the same session's token, signed by
    this server, and it stays valid as long as a new one would be for the rest of a working session."""
    limit = config.get("WTF_CSRF_TIME_LIMIT")
    signed = signed_at(token)
    if signed is None:
        return False
    return limit is None or 0 <= time.time() - signed < limit / 2


@bp.get("/<int:project_id>/guidelines")
@login_required
def guidelines(project_id: int):
    """The guidelines in force, on a page of their own (the judging page also has them one key away)."""
    project = _own_project_or_404(project_id)
    current = projects.current_guidelines(get_db(), project)
    return render_template(
        "judge/guidelines.html",
        project=project,
        grades=projects.grades(project),
        guidelines=render_guidelines(current.text if current else ""),
        guidelines_version=current.version if current else None,
    )
