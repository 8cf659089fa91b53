"""The prompt of a machine judge run by golden (``golden machine run``), its version, the answer's
schema and the one strict parser of an answer.

The prompt is a Jinja template rendered (with autoescape off: it is text for a model, never a
page) from the project's guidelines in force, its grade scale (numbers, names, descriptions), the
query, the query's information need in force and the document. The default template,
:data:`DEFAULT_TEMPLATE`, follows the method of UMBRELA (Upadhyay et al., "UMBRELA: UMbrela is the
(Open-Source Reproduction of the) Bing RELevance Assessor", 2024), itself a reproduction of
Thomas et al., "Large language models can accurately predict searcher preferences" (SIGIR 2024):
the model takes the role of a search quality rater, is given the query (and here its information
need), the passage and the grade scale, is asked to consider how well the passage matches the
searcher's intent and how trustworthy it is, and then answers with one final grade. The wording is
golden's own, and golden adds the project's guidelines, which people judge under too.

A team's own template is a Jinja file given with ``--template``; it sees the same variables:
``guidelines`` (text or None), ``guidelines_version``, ``grades`` (list of objects with ``grade``,
``name``, ``description``), ``query``, ``qid``, ``need`` (``description``, ``narrative``, ``version``;
None when no need is written), ``title``, ``document``.

**Prompt version.** ``<template name>-<first 12 hex of the template's SHA-256>+g<guidelines
version>`` (``g0`` before any guidelines); each label also records the version of its query's
information need. A label is stale when either differs from what a run would use now.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

DEFAULT_NAME = "umbrela"

DEFAULT_TEMPLATE = """\
You are a search quality rater. A person typed a query into a search engine and you judge how
well one document answers what that person was looking for.
{% if guidelines %}
The judging guidelines (version {{ guidelines_version }}) that human raters follow too:
{{ guidelines }}
{% endif %}
Grades:
{% for g in grades %}- {{ g.grade }} ({{ g.name }}){% if g.description %}: {{ g.description }}{% endif %}
{% endfor %}
Query: {{ query }}
{% if need %}{% if need.description %}What the searcher wants: {{ need.description }}
{% endif %}{% if need.narrative %}What counts as relevant: {{ need.narrative }}
{% endif %}{% endif %}
Document{% if title %} ({{ title }}){% endif %}:
{{ document }}

Work through it quietly: first, how well does the document's content match the searcher's intent
(not just the query's words)? Second, how trustworthy and complete is it on that intent? Then give
one final grade from the list above, taking both into account.

Answer with a JSON object and nothing else: {"grade": <one of {{ grades | map(attribute='grade') | join(', ') }}>}
"""


class AnswerError(ValueError):
    """An answer that gives no grade. ``kind``: ``refusal`` or ``unparseable``."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class Template:
    name: str
    text: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def version(self, guidelines_version: int | None) -> str:
        """The prompt version: template name and hash, and the guidelines version."""
        return f"{self.name}-{self.sha256[:12]}+g{guidelines_version or 0}"

    def render(self, **context) -> str:
        from jinja2 import StrictUndefined
        from jinja2.sandbox import SandboxedEnvironment

        env = SandboxedEnvironment(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
        return env.from_string(self.text).render(**context)


def load_template(path: str | Path | None) -> Template:
    """The default template (``path`` None), or a team's Jinja file (named after its stem); a file
    that is not a valid template is refused with its line."""
    if path is None:
        return Template(DEFAULT_NAME, DEFAULT_TEMPLATE)
    from jinja2 import TemplateSyntaxError
    from jinja2.sandbox import SandboxedEnvironment

    p = Path(path)
    if not p.is_file():
        raise ValueError(f"template: no file {p}")
    data = p.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ValueError(f"template: line {line} of {p} is not UTF-8 (byte {exc.start})") from None
    if not text.strip():
        raise ValueError(f"template: {p} is empty")
    try:
        SandboxedEnvironment().parse(text)
    except TemplateSyntaxError as exc:
        raise ValueError(f"template: line {exc.lineno} of {p}: {exc.message}") from None
    return Template(p.stem, text)


def answer_schema(scale: list[int]) -> dict:
    """The JSON schema of an answer: one object with an integer ``grade`` from the scale."""
    return {"type": "object", "properties": {"grade": {"type": "integer", "enum": list(scale)}},
            "required": ["grade"], "additionalProperties": False}


def response_format(form: str, scale: list[int]) -> dict | None:
    """The ``response_format`` of a request: llama.cpp's own ``{"type": "json_object", "schema": S}``
    (``form`` "json_object"), the OpenAI form ``{"type": "json_schema", "json_schema": {...}}``
    ("json_schema"), or none ("none"; the strict parser alone)."""
    schema = answer_schema(scale)
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    if form == "json_schema":
        return {"type": "json_schema", "json_schema": {"name": "grade", "strict": True, "schema": schema}}
    if form == "none":
        return None
    raise ValueError(f"structured: unknown form {form!r} (json_object, json_schema, none)")


def parse_grade(text: str | None, scale: list[int]) -> int:
    """The grade of an answer: exactly one JSON object (whitespace around it allowed) whose only key
    is ``grade``, an integer of the scale. Anything else raises :class:`AnswerError`
    ("unparseable"): no grade is ever guessed from prose."""
    if text is None or not text.strip():
        raise AnswerError("unparseable", "empty answer")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AnswerError("unparseable", f"not JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(obj, dict) or set(obj) != {"grade"}:
        raise AnswerError("unparseable", 'not an object with the one key "grade"')
    g = obj["grade"]
    if isinstance(g, bool) or not isinstance(g, int):
        raise AnswerError("unparseable", f"grade {g!r} is not an integer")
    if g not in scale:
        raise AnswerError("unparseable", f"grade {g} is not on the scale {scale}")
    return g


def grade_probabilities(logprobs: dict | None, scale: list[int]) -> dict[int, float] | None:
    """The probability of each grade from the log-probabilities returned with an answer
    (OpenAI's ``choices[0].logprobs.content``: one entry per generated token with its
    ``top_logprobs``): at the first generated token that is a grade of the scale (stripped of
    spaces and quotes), the alternatives that are also grades, exponentiated and normalised to sum
    to 1. None when no such token or no alternatives were returned. (Under a grammar a server may
    report tokens the grammar forbade; those that are not grades are left out by the same rule.)"""
    if not logprobs or not isinstance(logprobs.get("content"), list):
        return None
    names = {str(g): g for g in scale}
    for entry in logprobs["content"]:
        if not isinstance(entry, dict) or str(entry.get("token", "")).strip(' "') not in names:
            continue
        probs: dict[int, float] = {}
        for alt in entry.get("top_logprobs") or []:
            tok = str(alt.get("token", "")).strip(' "')
            lp = alt.get("logprob")
            if tok in names and isinstance(lp, int | float) and math.isfinite(lp):
                g = names[tok]
                probs[g] = probs.get(g, 0.0) + math.exp(lp)
        total = sum(probs.values())
        if total <= 0:
            return None
        return {g: p / total for g, p in sorted(probs.items())}
    return None
