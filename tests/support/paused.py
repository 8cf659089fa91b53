"""Run ``golden`` in this process, paused at one point so that a test can signal it there.

    python -m tests.support.paused MODULE:NAME CALL FLAG golden-args...

wraps the function ``NAME`` of ``MODULE`` (a module-level function, or ``Class.method``): its
``CALL``-th call (from 1) first creates the file ``FLAG`` and then sleeps for a minute before doing
its work, so the test waits for ``FLAG`` and sends its signal while golden is in that call. Every
other call, and everything else, is the real code.
"""

from __future__ import annotations

import functools
import importlib
import sys
import time
from pathlib import Path


def pause_at(target: str, call: int, flag: str) -> None:
    module_name, _, attr = target.partition(":")
    owner = importlib.import_module(module_name)
    *path, name = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    real = getattr(owner, name)
    calls = [0]

    @functools.wraps(real)
    def paused(*args, **kwargs):
        calls[0] += 1
        if calls[0] == call:
            Path(flag).write_text("here")
            time.sleep(60)
        return real(*args, **kwargs)

    setattr(owner, name, paused)


if __name__ == "__main__":
    target, call, flag, *argv = sys.argv[1:]
    pause_at(target, int(call), flag)
    from curation.cli import main

    main(argv, prog_name="golden")
