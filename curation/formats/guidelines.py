"""The guidelines file (Markdown): the one reader of the written definition of relevance."""

from __future__ import annotations

import os

from curation.formats.fileio import InputError, open_text
from curation.formats.limits import check_size

LIMIT = "GOLDEN_MAX_GUIDELINES_BYTES"


def read_guidelines(path: str | os.PathLike) -> str:
    """The text of the guidelines file ``path``: strict UTF-8 (a byte-order mark dropped), line ends made
    ``\\n`` (a CRLF file is the same text as the clean one); InputError naming the file when it is empty
    and when it passes the size limit ``GOLDEN_MAX_GUIDELINES_BYTES``."""
    with open_text(path) as fh:
        text = "".join(line.rstrip("\r\n") + "\n" if line.endswith(("\r", "\n")) else line for line in fh)
    check_size(text, LIMIT, path, None, "the guidelines text")
    if not text.strip():
        raise InputError(path, None, "the guidelines are empty; write the definition of relevance")
    return text
