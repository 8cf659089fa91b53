"""The strict parser of an answer, the grade probabilities from log-probabilities, the structured
output forms, and the default template (UMBRELA's method) rendered from the project's material."""

from __future__ import annotations

import math

import pytest

from curation.machine.prompt import AnswerError, grade_probabilities, load_template, parse_grade, response_format

SCALE = [0, 1, 2]


@pytest.mark.parametrize("text", ['{"grade": 2}', ' \n{"grade":2}\n ', '{ "grade" : 2 }'])
def test_an_answer_is_one_object_with_a_grade_of_the_scale(text):
    assert parse_grade(text, SCALE) == 2


@pytest.mark.parametrize(("text", "why"), [
    (None, "empty"), ("", "empty"), ("2", "one key"), ("The grade is 2.", "not JSON"),
    ('{"grade": 2} and more', "not JSON"), ('{"grade": 2, "why": "x"}', "one key"), ('{"score": 2}', "one key"),
    ('{"grade": "2"}', "not an integer"), ('{"grade": true}', "not an integer"), ('{"grade": 2.0}', "not an integer"),
    ('{"grade": 3}', "not on the scale"), ('[{"grade": 1}]', "one key"),
])
def test_anything_else_is_unparseable_never_a_guess(text, why):
    with pytest.raises(AnswerError) as exc:
        parse_grade(text, SCALE)
    assert exc.value.kind == "unparseable" and why in str(exc.value)


def test_grade_probabilities_from_the_grade_tokens_alternatives():
    lp = {"content": [
        {"token": "{", "logprob": -0.1, "top_logprobs": [{"token": "1", "logprob": -5.0}]},  # not a grade token
        {"token": '"grade":', "logprob": -0.1, "top_logprobs": []},
        {"token": " 2", "logprob": -0.5, "top_logprobs": [
            {"token": " 2", "logprob": -0.5}, {"token": "1", "logprob": -1.5}, {"token": "x", "logprob": -0.1},
            {"token": "7", "logprob": -0.2}]},
    ]}
    p = grade_probabilities(lp, SCALE)
    a, b = math.exp(-0.5), math.exp(-1.5)
    assert p == pytest.approx({1: b / (a + b), 2: a / (a + b)})
    assert grade_probabilities(None, SCALE) is None
    assert grade_probabilities({"content": [{"token": "x", "top_logprobs": []}]}, SCALE) is None


def test_structured_output_forms():
    llama = response_format("json_object", SCALE)
    openai = response_format("json_schema", SCALE)
    assert llama["type"] == "json_object" and llama["schema"]["properties"]["grade"]["enum"] == SCALE
    assert openai["type"] == "json_schema" and openai["json_schema"]["strict"] is True
    assert openai["json_schema"]["schema"] == llama["schema"]
    assert response_format("none", SCALE) is None
    with pytest.raises(ValueError, match="structured"):
        response_format("xml", SCALE)


def test_the_default_template_carries_the_guidelines_scale_need_and_document():
    t = load_template(None)
    text = t.render(guidelines="Tables count as answers.", guidelines_version=3,
                    grades=[{"grade": 0, "name": "Not useful", "description": "off topic"},
                            {"grade": 1, "name": "Partly", "description": None},
                            {"grade": 2, "name": "Answers it", "description": "the whole answer"}],
                    query="refund twice charged", qid="q1",
                    need={"description": "get money back", "narrative": "a refund page is relevant", "version": 2},
                    title="Refunds", document="How refunds work.")
    for part in ("Tables count as answers.", "version 3", "0 (Not useful): off topic", "1 (Partly)",
                 "refund twice charged", "get money back", "a refund page is relevant", "Refunds",
                 "How refunds work.", '{"grade": <one of 0, 1, 2>}'):
        assert part in text, part
    assert t.version(3) == f"umbrela-{t.sha256[:12]}+g3" and t.version(None).endswith("+g0")
    # <script> in a document stays text: the prompt is for a model, not a page
    assert "<b>x</b>" in t.render(guidelines=None, guidelines_version=None, grades=[], query="q", qid="q",
                                  need=None, title=None, document="<b>x</b>")
