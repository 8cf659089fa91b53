import pytest

from curation.formats.normalize import normalize_text


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("  Hello   World ", "hello world"),
        ("What\u2019s new", "what's new"),
        ("\u201cquoted\u201d", '"quoted"'),
        ("zero\u200bwidth", "zerowidth"),
        ("ﬁle", "file"),  # NFKC expands the ligature
        ("Straße", "strasse"),  # casefold, not lower
        ("tab\tand\nnewline", "tab and newline"),
        ("\uff21\uff22\uff23", "abc"),  # full-width letters
    ],
)
def test_normalize_text(raw, expected):
    assert normalize_text(raw) == expected


def test_normalize_is_idempotent():
    s = "  Ｆｕｌｌ\u2019s  \u200bSTRASSE "
    assert normalize_text(normalize_text(s)) == normalize_text(s)


def test_normalize_rejects_non_strings():
    with pytest.raises(TypeError):
        normalize_text(None)
