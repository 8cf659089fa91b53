"""The CLI starts fast: importing it, `golden --help`, `golden --version` and every command's
--help load none of the heavy libraries; the commands import them when they run.
(The start-up time itself is measured in bench/bench_startup.py.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

import curation.cli

HEAVY = ("scipy", "pandas", "sklearn", "sqlalchemy", "sqlmodel", "numpy", "pyarrow", "flask", "gunicorn", "alembic",
         "tqdm")

# Every top-level command, as the README and the commands' docstrings name them.
COMMANDS = {
    "adjudicate", "agreement", "assign", "attribute", "audit", "calibrate", "compare", "corpus-sample", "coverage",
    "db", "demo",
    "export", "guidelines", "import-judgments", "leakcheck", "machine", "metrics", "noise", "pool", "power", "project",
    "progress", "release", "sample", "seed-judgments", "serve", "settle", "simulate-judging", "split", "sweep",
    "user", "verify",
}

PROBE = """
import json, sys
from curation.cli import main
loaded = lambda: sorted({m.split(".")[0] for m in sys.modules} & set(HEAVY))
report = {"import": loaded()}
def paths(group, prefix=()):
    for name, command in sorted(group.commands.items()):
        yield prefix + (name,)
        if hasattr(command, "commands"):
            yield from paths(command, prefix + (name,))
for args in [["--help"], ["--version"], *[[*p, "--help"] for p in paths(main)]]:
    try:
        main(args, prog_name="golden", standalone_mode=False)
    except SystemExit:
        pass
    report[" ".join(args)] = loaded()
print(json.dumps(report))
"""


def _python(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120,
                          env=os.environ.copy(), check=False)


def test_importing_the_cli_loads_no_heavy_library():
    res = _python(f"import sys, curation.cli; print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))")
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_help_and_version_of_every_command_load_no_heavy_library():
    res = _python(f"HEAVY = {HEAVY!r}\n" + PROBE)
    assert res.returncode == 0, res.stderr
    report = json.loads(res.stdout.splitlines()[-1])
    assert len(report) > len(COMMANDS)  # import, --help, --version, and each command and subcommand
    assert {what: heavy for what, heavy in report.items() if heavy} == {}


def test_golden_help_lists_every_command():
    res = _python("from curation.cli import main; main()", "--help")
    assert res.returncode == 0, res.stderr
    listed = {line.split()[0] for line in res.stdout.split("Commands:")[1].splitlines() if line.startswith("  ")}
    assert listed == COMMANDS


def test_every_command_module_is_registered():
    """A module added to curation/cli/ but not named in curation.cli.COMMAND_MODULES would attach no
    command: each one must be named there, and importing it must attach exactly the commands named
    with it."""
    folder = Path(curation.cli.__file__).parent
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "base"}
    assert set(curation.cli.COMMAND_MODULES.values()) == modules
    assert set(curation.cli.COMMAND_MODULES) == COMMANDS
    res = _python("import json, sys\nfrom curation.cli import COMMAND_MODULES, main\nout = {}\n"
                  "for module in sorted(set(COMMAND_MODULES.values())):\n"
                  "    before = set(dict.keys(main.commands))\n"
                  "    __import__(f'curation.cli.{module}')\n"
                  "    out[module] = sorted(set(dict.keys(main.commands)) - before)\n"
                  "print(json.dumps(out))")
    assert res.returncode == 0, res.stderr
    attached = json.loads(res.stdout)
    assert attached == {m: sorted(c for c, mm in curation.cli.COMMAND_MODULES.items() if mm == m) for m in modules}


def test_a_command_imports_its_own_module_only():
    """`golden pool` (here its --help) imports curation/cli/pool.py and no other command's module."""
    res = _python("import sys\nfrom curation.cli import main\n"
                  "try:\n    main(['pool', '--help'], prog_name='golden')\nexcept SystemExit:\n    pass\n"
                  "print(' '.join(sorted(m for m in sys.modules if m.startswith('curation.cli.'))))")
    assert res.returncode == 0, res.stderr
    assert "Pool the top DEPTH documents" in res.stdout
    assert res.stdout.splitlines()[-1].split() == ["curation.cli.base", "curation.cli.pool"]
