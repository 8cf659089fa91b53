"""Signed tokens this process verified lately: the CSRF tokens of the forms and the session
cookies, remembered so that a judge's every answer does not verify the same signature again
(itsdangerous: a key derivation, an HMAC, base64 and JSON).

A token is remembered only once verified, under its whole text (the signature included), with the
time it was signed, and found again only within the age its verifier allows; a changed or forged
token is never found and is verified as before.
"""

from __future__ import annotations

import time

from itsdangerous import BadData
from itsdangerous.encoding import base64_decode, bytes_to_int


def signed_at(token: str) -> int | None:
    """When an itsdangerous token (``value.timestamp.signature``) says it was signed, in seconds
    since the epoch; None when it has no readable timestamp. Read, not verified."""
    try:
        return bytes_to_int(base64_decode(token.rsplit(".", 2)[1]))
    except (BadData, IndexError, ValueError, TypeError, AttributeError):
        return None


class VerifiedTokens:
    """What was verified of each token (any value), with its signing time; at most
    :attr:`MAX_REMEMBERED` tokens (all forgotten at once when full)."""

    MAX_REMEMBERED = 4096

    def __init__(self):
        self._seen: dict[object, tuple[object, float]] = {}

    def get(self, key, max_age: float | None):
        """The value remembered under ``key`` when it was signed at most ``max_age`` seconds ago
        (None: any age), else None."""
        seen = self._seen.get(key)
        if seen is not None and (max_age is None or 0 <= time.time() - seen[1] <= max_age):
            return seen[0]
        return None

    def remember(self, key, value, signed: float) -> None:
        if len(self._seen) >= self.MAX_REMEMBERED:
            self._seen.clear()
        self._seen[key] = (value, signed)
