"""Flags for queries that look like personal data, so a person decides before they are judged.

Three patterns, chosen to catch what search logs leak most (people paste contact details and
account or order numbers into search boxes). They flag, they never remove: the output keeps the
query and lists its flags, and ``golden sample queries`` counts them in its summary.

- ``email``: ``local@domain.tld``.
- ``phone``: 9 to 15 digits written as a phone number (optional ``+`` country code, groups joined
  by spaces, dots, dashes or brackets), or a local ``123-4567`` form. Dates such as
  ``2024-01-15`` have 8 digits and are not flagged.
- ``digits``: a run of 9 or more consecutive digits (account, national id, order numbers), or 13
  to 19 digits in groups, as card numbers are written.
"""

from __future__ import annotations

import re

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}", re.IGNORECASE)
_PHONE = re.compile(r"(?<![\w+])(?:\+\s?)?\(?\d{1,4}\)?(?:[\s.\-]?\(?\d{2,5}\)?){1,5}(?![\w])")
_LOCAL_PHONE = re.compile(r"(?<![\d\w-])\d{3}-\d{4}(?![\d\w-])")
_DIGIT_RUN = re.compile(r"\d{9,}|(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")  # or a card number in groups


def pii_flags(text: str) -> list[str]:
    """The sorted personal-data flags of ``text`` (``[]`` when it looks clean).

    >>> pii_flags("mail jane.doe@example.com re order 123456789")
    ['digits', 'email']
    >>> pii_flags("call +44 20 7946 0958")
    ['phone']
    >>> pii_flags("iphone 15 pro 256gb 2024-01-15")
    []
    """
    flags = set()
    if "@" in text and _EMAIL.search(text):
        flags.add("email")
    if _DIGIT_RUN.search(text):
        flags.add("digits")
    for match in _PHONE.finditer(text):
        digits = sum(ch.isdigit() for ch in match.group())
        separated = not match.group().isdigit()
        if 9 <= digits <= 15 and separated:
            flags.add("phone")
            break
    if "phone" not in flags and _LOCAL_PHONE.search(text):
        flags.add("phone")
    return sorted(flags)
