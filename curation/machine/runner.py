"""``golden machine run``: prompt a machine judge through an OpenAI-compatible endpoint (a hosted
API, vLLM, Ollama, llama.cpp's server) and store its labels with their provenance.

The wire is httpx's async client (``POST {base_url}/chat/completions``), up to ``concurrency``
requests at a time, started no faster than ``requests_per_minute``, and no new request once the
tokens used reach ``token_budget``. Per request:

- HTTP 429 and 5xx, and a connection that fails, are retried up to ``max_retries`` times, waiting
  the ``Retry-After`` header's seconds (or date) when given, else ``backoff * 2**attempt`` seconds
  (at most ``max_backoff``);
- a timeout, a refusal (``message.refusal`` or ``finish_reason`` "content_filter"), an answer the
  strict parser refuses (:func:`curation.machine.prompt.parse_grade`), a body that is not the
  OpenAI shape and an HTTP error left after the retries are stored as a
  :class:`~curation.store.models.MachineFailure` (counted, shown, asked again by a later run),
  never as a grade;
- a server that cannot be reached after the retries stops the run ("server-down"): what was
  answered is committed, and the next run continues.

Labels are committed as they arrive (each wake of the loop commits every answer that came in).
SIGINT stops the run the same way ("interrupted"). A (pair, sample) already answered under the same
prompt version and information-need version is never asked again
(:func:`curation.machine.runs.answered`).

Structured output: ``structured="auto"`` sends llama.cpp's own form
``{"type": "json_object", "schema": ...}`` when ``GET /models`` says the server is llama.cpp
(``owned_by`` "llamacpp", or "me" for llama-cpp-python), else OpenAI's ``json_schema`` form;
either way the answer goes through the strict parser. With ``logprobs`` the grade token's
alternatives become the label's probabilities; else, with ``samples`` > 1, the samples' vote shares
(:func:`curation.machine.runs.apply_vote_shares`).
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import os
import signal
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import insert
from sqlmodel import Session

from curation.machine.labels import get_machine
from curation.machine.prompt import (
    AnswerError,
    Template,
    grade_probabilities,
    load_template,
    parse_grade,
    response_format,
)
from curation.machine.runs import PairText, answered, apply_vote_shares, finish_run, pair_texts, select_pairs, start_run
from curation.store.models import MachineFailure, MachineJudge, MachineLabel, utcnow
from curation.store.projects import current_guidelines, get_project, grades
from curation.store.users import get_user

CHARS_PER_TOKEN = 4  # the dry run's estimate of a prompt's tokens: about 4 characters a token
LLAMA_OWNERS = ("llamacpp", "me")  # owned_by in GET /models: llama.cpp's server, llama-cpp-python's


@dataclass
class WireSettings:
    base_url: str
    model: str
    api_key: str | None = None  # from the environment; never stored
    concurrency: int = 4
    requests_per_minute: float | None = None
    token_budget: int | None = None
    timeout: float = 60.0
    max_retries: int = 4
    backoff: float = 0.5
    max_backoff: float = 30.0
    structured: str = "auto"  # auto, json_object, json_schema, none
    temperature: float = 0.0
    top_p: float | None = None
    seed: int | None = None
    max_tokens: int = 32
    logprobs: bool = False
    top_logprobs: int = 5

    def __post_init__(self):
        if self.concurrency < 1:
            raise ValueError("concurrency: at least 1")
        if self.requests_per_minute is not None and self.requests_per_minute <= 0:
            raise ValueError("requests-per-minute: must be positive")
        if self.structured not in ("auto", "json_object", "json_schema", "none"):
            raise ValueError(f"structured: {self.structured!r} is not auto, json_object, json_schema or none")


@dataclass(frozen=True)
class Job:
    pair: PairText
    sample: int
    prompt: str


@dataclass
class Answer:
    job: Job
    grade: int
    probabilities: dict[int, float] | None
    raw: str
    served_model: str | None
    tokens_in: int | None
    tokens_out: int | None
    latency_ms: float


@dataclass
class Failure:
    job: Job
    kind: str  # timeout, refusal, unparseable, malformed, http
    detail: str
    raw: str | None = None
    tokens: int = 0


@dataclass
class ServerDown:
    job: Job
    detail: str


@dataclass
class RunReport:
    project: str
    machine: str
    model: str
    prompt_version: str
    template: str
    guidelines_version: int | None
    selection: str
    pairs: int  # pairs selected
    jobs: int  # (pair, sample) requests to make (already answered ones left out)
    already: int  # (pair, sample) answered before this run
    run_id: int | None = None
    status: str = "dry-run"
    asked: int = 0  # requests sent (retries not counted)
    labelled: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    structured: str | None = None
    served_models: list[str] = field(default_factory=list)
    expected_tokens_in: int = 0
    expected_tokens_out: int = 0
    cost: float | None = None
    requests: list[dict] = field(default_factory=list)  # dry run: the first requests, as they would be sent
    vote_pairs: int = 0

    def as_dict(self) -> dict:
        return dict(self.__dict__)


# ------------------------------------------------------------------------------------------ wire


def retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date), None when
    absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def request_body(job: Job, s: WireSettings, rf: dict | None) -> dict:
    body: dict[str, Any] = {"model": s.model, "messages": [{"role": "user", "content": job.prompt}],
                            "temperature": s.temperature, "max_tokens": s.max_tokens}
    if s.top_p is not None:
        body["top_p"] = s.top_p
    if s.seed is not None:
        body["seed"] = s.seed + job.sample
    if rf is not None:
        body["response_format"] = rf
    if s.logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = s.top_logprobs
    return body


async def ask(client, job: Job, s: WireSettings, rf: dict | None, scale: list[int]):
    """One (pair, sample): an :class:`Answer`, a :class:`Failure` or :class:`ServerDown`."""
    import httpx

    body = request_body(job, s, rf)
    last = ""
    for attempt in range(s.max_retries + 1):
        wait = min(s.max_backoff, s.backoff * 2 ** attempt)
        t0 = time.perf_counter()
        try:
            resp = await client.post("chat/completions", json=body)
        except httpx.TimeoutException as exc:
            return Failure(job, "timeout", f"no answer within {s.timeout:g} s ({type(exc).__name__})")
        except httpx.TransportError as exc:
            last = f"{type(exc).__name__}: {exc}"
            if attempt < s.max_retries:
                await asyncio.sleep(wait)
                continue
            return ServerDown(job, last)
        latency = 1000 * (time.perf_counter() - t0)
        if resp.status_code == 429 or resp.status_code >= 500:
            last = f"HTTP {resp.status_code}: {resp.text[:200]}"
            if attempt < s.max_retries:
                ra = retry_after(resp.headers.get("retry-after"))
                await asyncio.sleep(min(s.max_backoff, ra) if ra is not None else wait)
                continue
            return Failure(job, "http", f"{last} (after {s.max_retries} retries)", resp.text[:2000])
        if resp.status_code >= 400:
            return Failure(job, "http", f"HTTP {resp.status_code}: {resp.text[:500]}", resp.text[:2000])
        raw = resp.text
        try:
            data = json.loads(raw)
            choice = data["choices"][0]
            message = choice["message"]
            usage = data.get("usage") or {}
        except (ValueError, KeyError, IndexError, TypeError):
            return Failure(job, "malformed", "the body is not an OpenAI chat completion", raw[:2000])
        content = message.get("content") if isinstance(message, dict) else None
        tokens = int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)
        if (isinstance(message, dict) and message.get("refusal")) or choice.get("finish_reason") == "content_filter":
            return Failure(job, "refusal", str(message.get("refusal") or "content_filter")[:500], content, tokens)
        try:
            grade = parse_grade(content, scale)
        except AnswerError as exc:
            return Failure(job, exc.kind, str(exc), content, tokens)
        probs = grade_probabilities(choice.get("logprobs"), scale) if s.logprobs else None
        return Answer(job, grade, probs, content, data.get("model"), usage.get("prompt_tokens"),
                      usage.get("completion_tokens"), latency)
    return ServerDown(job, last)  # not reached


async def detect_structured(client) -> tuple[str, list[str]]:
    """The structured-output form the server takes, from ``GET /models``, and the models it lists."""
    resp = await client.get("models")
    resp.raise_for_status()
    data = resp.json().get("data") or []
    owners = {str(m.get("owned_by", "")).lower() for m in data if isinstance(m, dict)}
    ids = [str(m.get("id")) for m in data if isinstance(m, dict)]
    return ("json_object" if owners & set(LLAMA_OWNERS) else "json_schema"), ids


class RateLimiter:
    """Starts no more than ``per_minute`` requests a minute, evenly spaced."""

    def __init__(self, per_minute: float | None):
        self.gap = 60.0 / per_minute if per_minute else 0.0
        self.next = 0.0

    async def wait(self) -> None:
        if not self.gap:
            return
        # The slot is taken before sleeping: waiters that arrive together get successive slots
        # (taking it after the sleep let two of them wake for the same one).
        now = time.monotonic()
        start = max(now, self.next)
        self.next = start + self.gap
        if start > now:
            await asyncio.sleep(start - now)


# ----------------------------------------------------------------------------------------- run


def build_prompt(template: Template, pair: PairText, *, guidelines: str | None, guidelines_version: int | None,
                 scale_def, max_doc_chars: int | None) -> str:
    doc = pair.document if not max_doc_chars else pair.document[:max_doc_chars]
    need = None
    if pair.need_description or pair.need_narrative:
        need = {"description": pair.need_description, "narrative": pair.need_narrative, "version": pair.need_version}
    return template.render(
        guidelines=guidelines, guidelines_version=guidelines_version,
        grades=[{"grade": g.grade, "name": g.name, "description": getattr(g, "description", None)} for g in scale_def],
        query=pair.query, qid=pair.qid, need=need, title=pair.title, document=doc)


@dataclass(frozen=True)
class RunIds:
    """What each stored label repeats of its run, read once (the run's row expires at each commit)."""

    id: int
    machine_id: int
    model: str


def _label_row(a: Answer, run: RunIds, project_id: int, prompt_version: str, sampling: dict) -> dict:
    j = a.job
    samp = dict(sampling, seed=None if sampling.get("seed") is None else sampling["seed"] + j.sample,
                probabilities="logprobs" if a.probabilities else None)
    probs = None if a.probabilities is None else json.dumps({str(g): p for g, p in a.probabilities.items()},
                                                            sort_keys=True)
    return dict(project_id=project_id, pair_id=j.pair.pair_id, machine_id=run.machine_id, grade=a.grade,
                sample=j.sample, probabilities_json=probs,
                confidence=None if a.probabilities is None else a.probabilities.get(a.grade, 0.0),
                rationale=None, model=run.model, prompt_version=prompt_version,
                token=f"run:{run.id}:{j.pair.pair_id}:{j.sample}:{j.pair.need_version}", imported_at=utcnow(),
                run_id=run.id, need_version=j.pair.need_version, served_model=a.served_model,
                sampling_json=json.dumps(samp, sort_keys=True), raw_response=a.raw, tokens_in=a.tokens_in,
                tokens_out=a.tokens_out, latency_ms=round(a.latency_ms, 3))


def run_machine(
    session: Session,
    *,
    project: str | None,
    machine: str,
    wire: WireSettings,
    selection: str = "all",
    sample_size: int | None = None,
    seed: int = 0,
    samples: int = 1,
    template_path: str | None = None,
    max_doc_chars: int | None = 8000,
    dry_run: bool = False,
    price_in: float | None = None,
    price_out: float | None = None,
    progress: bool = True,
    handle_sigint: bool = True,
) -> RunReport:
    """Run machine judge ``machine`` on ``project``'s pairs (``selection``: all, overlap, unjudged,
    sample, stale) through the endpoint of ``wire``; ``samples`` requests per pair. Prices are per
    million tokens. Returns the report; the run, its labels and failures are in the store."""
    if samples < 1:
        raise ValueError("samples: at least 1")
    proj = get_project(session, project)
    if not machine or not machine.strip():
        raise ValueError("machine: a machine judge needs a name")
    if get_user(session, machine) is not None:
        raise ValueError(f"machine: {machine!r} is a human user; give the machine judge a name of its own")
    template = load_template(template_path)
    gl = current_guidelines(session, proj)
    gv = gl.version if gl else None
    pv = template.version(gv)
    scale_def = grades(proj)
    scale = [g.grade for g in scale_def]
    mj = get_machine(session, machine)
    ids = select_pairs(session, proj, selection, machine=mj, prompt_version=pv, n=sample_size, seed=seed)
    texts = pair_texts(session, proj, ids)
    done = answered(session, proj, mj, pv)
    jobs, already = _plan_jobs(texts, done, template, samples=samples, guidelines=gl, scale_def=scale_def,
                               max_doc_chars=max_doc_chars)
    report = RunReport(proj.name, machine, wire.model, pv, template.name, gv, selection, len(texts), len(jobs),
                       already)
    _expect(report, jobs, wire, price_in=price_in, price_out=price_out)
    if dry_run:
        _show_requests(report, jobs, wire, scale)
        return report
    if mj is None:
        mj = MachineJudge(name=machine)
        session.add(mj)
        session.commit()
        session.refresh(mj)
    sampling = {"temperature": wire.temperature, "top_p": wire.top_p, "seed": wire.seed,
                "max_tokens": wire.max_tokens, "logprobs": wire.logprobs}
    run = start_run(session, proj, mj, model=wire.model, base_url=wire.base_url, prompt_version=pv,
                    template_hash=template.sha256, template_name=template.name, guidelines_version=gv,
                    sampling_json=json.dumps(sampling, sort_keys=True), samples=samples, selection=selection,
                    pairs_planned=len(texts))
    report.run_id = run.id
    t0 = time.perf_counter()
    try:
        status = asyncio.run(_drive(session, run, mj, proj.id, pv, jobs, wire, scale, sampling, report,
                                    progress=progress, handle_sigint=handle_sigint))
    except KeyboardInterrupt:
        session.rollback()
        status = "interrupted"
    except BaseException as exc:  # the run row never stays "running": say how it ended, then raise
        session.rollback()
        finish_run(session, run, "server-down" if isinstance(exc, ValueError) else "failed")
        raise
    report.seconds = time.perf_counter() - t0
    report.vote_pairs = apply_vote_shares(session, mj, proj, pv, samples)
    finish_run(session, run, status)
    report.status = status
    return report


def _plan_jobs(texts, done, template, *, samples: int, guidelines, scale_def, max_doc_chars: int | None):
    """The requests to make: for each pair, the samples not ``done`` yet with this prompt version,
    each with its pair's prompt (built once a pair); and how many samples were already done."""
    gv = guidelines.version if guidelines else None
    jobs: list[Job] = []
    already = 0
    for pt in texts:
        prompt = None
        for k in range(samples):
            if (pt.pair_id, k, pt.need_version) in done:
                already += 1
                continue
            if prompt is None:
                prompt = build_prompt(template, pt, guidelines=guidelines.text if guidelines else None,
                                      guidelines_version=gv, scale_def=scale_def, max_doc_chars=max_doc_chars)
            jobs.append(Job(pt, k, prompt))
    return jobs, already


def _expect(report: RunReport, jobs: list[Job], wire: WireSettings, *, price_in: float | None,
            price_out: float | None) -> None:
    """The run's expected tokens in and out, and its cost when a price is given (per million tokens)."""
    report.expected_tokens_in = sum(math.ceil(len(j.prompt) / CHARS_PER_TOKEN) for j in jobs)
    report.expected_tokens_out = len(jobs) * wire.max_tokens
    if price_in is not None or price_out is not None:
        report.cost = (report.expected_tokens_in * (price_in or 0.0) + report.expected_tokens_out * (price_out or 0.0)
                       ) / 1e6


def _show_requests(report: RunReport, jobs: list[Job], wire: WireSettings, scale) -> None:
    """A dry run's report: the structured output asked for and the first three requests' bodies."""
    form = wire.structured if wire.structured != "auto" else "json_object or json_schema (asked of the server)"
    rf = response_format(wire.structured, scale) if wire.structured != "auto" else None
    report.structured = form
    report.requests = [{"qid": j.pair.qid, "docid": j.pair.docid, "sample": j.sample,
                        "body": request_body(j, wire, rf)} for j in jobs[:3]]


async def _drive(session, run, mj, project_id, pv, jobs, wire: WireSettings, scale, sampling, report: RunReport, *,
                 progress: bool, handle_sigint: bool) -> str:
    import httpx

    headers = {"Authorization": f"Bearer {wire.api_key}"} if wire.api_key else {}
    base = wire.base_url.rstrip("/") + "/"
    limits = httpx.Limits(max_connections=wire.concurrency, max_keepalive_connections=wire.concurrency)
    timeout = httpx.Timeout(wire.timeout, connect=min(wire.timeout, 10.0))
    stop = {"reason": None}
    ids = RunIds(run.id, mj.id, run.model)
    served: set[str] = set()
    loop = asyncio.get_running_loop()
    inflight: set[asyncio.Task] = set()

    def on_sigint():
        stop["reason"] = "interrupted"
        for t in inflight:
            t.cancel()

    installed = False
    if handle_sigint:
        try:
            loop.add_signal_handler(signal.SIGINT, on_sigint)
            installed = True
        except (NotImplementedError, RuntimeError, ValueError):
            installed = False
    bar = None
    try:
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=timeout, limits=limits) as client:
            form = report.structured = await _structured_form(client, wire)
            rf = response_format(form, scale)
            if progress and jobs:
                from tqdm import tqdm

                bar = tqdm(total=len(jobs), unit="req", desc=pv[:32], dynamic_ncols=True)
            pending = deque(jobs)
            limiter = RateLimiter(wire.requests_per_minute)
            used = 0
            t_start = time.perf_counter()
            pairs_done: set[int] = set()
            while (pending or inflight) and stop["reason"] in (None, "budget"):
                while pending and len(inflight) < wire.concurrency and stop["reason"] is None:
                    if wire.token_budget is not None and used >= wire.token_budget:
                        stop["reason"] = "budget"
                        break
                    await limiter.wait()
                    if stop["reason"] is not None:
                        break
                    job = pending.popleft()
                    report.asked += 1
                    inflight.add(asyncio.ensure_future(ask(client, job, wire, rf, scale)))
                if not inflight:
                    break
                done, _ = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
                inflight.difference_update(done)
                labels, fails, tokens = _collect(done, ids, project_id, pv, sampling, report, served, pairs_done, stop)
                used += tokens
                if labels:
                    session.execute(insert(MachineLabel), labels)
                if fails:
                    session.execute(insert(MachineFailure), fails)
                if labels or fails:
                    session.commit()
                report.labelled += len(labels)
                if bar is not None:
                    bar.update(len(labels) + len(fails))
                    rate = report.tokens_out / max(1e-9, time.perf_counter() - t_start)
                    bar.set_postfix_str(f"pairs {len(pairs_done)}, errors {sum(report.errors.values())}, "
                                        f"{rate:.1f} tok/s", refresh=False)
            for t in inflight:
                t.cancel()
            if inflight:
                await asyncio.gather(*inflight, return_exceptions=True)
    finally:
        if bar is not None:
            bar.close()
        if installed:
            loop.remove_signal_handler(signal.SIGINT)
        report.served_models = sorted(served)
    return stop["reason"] or "finished"


async def _structured_form(client, wire: WireSettings) -> str:
    """The structured output to ask for: the one set, or with ``auto`` the one the server answers
    to (json_schema when it cannot tell); ValueError when the server cannot be reached."""
    import httpx

    form = wire.structured
    if form == "auto":
        try:
            form, _ids = await detect_structured(client)
        except httpx.TransportError as exc:
            raise ValueError(f"base-url: cannot reach {wire.base_url} ({type(exc).__name__}: {exc})") from None
        except (httpx.HTTPStatusError, ValueError):
            form = "json_schema"
    return form


def _collect(done, ids: RunIds, project_id: int, pv: str, sampling: dict, report: RunReport, served: set[str],
             pairs_done: set[int], stop: dict) -> tuple[list[dict], list[dict], int]:
    """The finished requests' label rows and failure rows, and the tokens they used; counts them in
    ``report``, notes the served models and answered pairs, and on a ServerDown sets ``stop``."""
    labels, fails, used = [], [], 0
    for t in done:
        if t.cancelled():
            continue
        out = t.result()
        if isinstance(out, Answer):
            labels.append(_label_row(out, ids, project_id, pv, sampling))
            used += (out.tokens_in or 0) + (out.tokens_out or 0)
            report.tokens_in += out.tokens_in or 0
            report.tokens_out += out.tokens_out or 0
            if out.served_model:
                served.add(out.served_model)
            pairs_done.add(out.job.pair.pair_id)
        elif isinstance(out, Failure):
            used += out.tokens
            fails.append(dict(run_id=ids.id, pair_id=out.job.pair.pair_id, sample=out.job.sample,
                              kind=out.kind, detail=out.detail, raw_response=out.raw, at=utcnow()))
            report.errors[out.kind] = report.errors.get(out.kind, 0) + 1
        else:  # ServerDown: stop; the unanswered jobs are asked by the next run
            stop["reason"] = "server-down"
            report.errors["server-down"] = report.errors.get("server-down", 0) + 1
    return labels, fails, used


def api_key_from_env(name: str | None) -> str | None:
    """The API key from the environment variable ``name`` (None when no name is given); a name that
    is not set is refused (the key is read, never stored or printed)."""
    if not name:
        return None
    value = os.environ.get(name)
    if not value:
        raise ValueError(f"api-key-env: the environment variable {name} is not set")
    return value
