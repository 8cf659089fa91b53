"""The CLI starts fast: importing it, `golden --help`, `golden --version` and every command's
--help load none of the heavy libraries; the commands import them when they run.
(The start-up time itself is measured in bench/bench_startup.py.)"""

import json
import os
import subprocess
import sys
from pathlib import Path

import curation.cli

HEAVY = ("scipy", "pandas", "sklearn", "sqlalchemy", "sqlmodel", "numpy", "pyarrow", "flask", "gunicorn", "granian",
         "alembic", "tqdm")

# What `golden --help` lists: the groups of the pipeline and the commands at the top.
TOP = {"demo", "sample", "pool", "project", "judging", "serve", "labels", "machine", "leakcheck", "export", "stats",
       "decisive",
       "admin"}

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
    assert len(report) > len(curation.cli.COMMANDS)  # import, --help, --version, and each command and subcommand
    assert {what: heavy for what, heavy in report.items() if heavy} == {}


def test_golden_help_lists_every_command():
    res = _python("from curation.cli import main; main()", "--help")
    assert res.returncode == 0, res.stderr
    listed = {line.split()[0] for line in res.stdout.split("Commands:")[1].splitlines() if line.startswith("  ")}
    assert listed == TOP


def test_every_command_module_is_registered():
    """A module added to curation/cli/ but not named in curation.cli.COMMANDS would attach no
    command: each one must be named there, and importing it must register exactly the commands named
    with it (each put in its place by the table, none left at the top under its own name)."""
    folder = Path(curation.cli.__file__).parent
    modules = {p.stem for p in folder.glob("*.py")} - {"__init__", "base"}
    assert {module for module, _ in curation.cli.COMMANDS.values()} == modules
    res = _python("import json, sys\nfrom curation.cli import COMMANDS, main\nout = {}\n"
                  "for module in sorted({m for m, _ in COMMANDS.values()}):\n"
                  "    before = set(main.table._placed)\n"
                  "    __import__(f'curation.cli.{module}')\n"
                  "    out[module] = sorted(set(main.table._placed) - before)\n"
                  "out['left at the top'] = sorted(dict.keys(main.commands))\n"
                  "print(json.dumps(out))")
    assert res.returncode == 0, res.stderr
    attached = json.loads(res.stdout)
    expected = {m: sorted(p for p, (mm, _) in curation.cli.COMMANDS.items() if mm == m) for m in modules}
    assert attached == {**expected, "left at the top": []}


def test_a_command_imports_its_own_module_only():
    """`golden pool` (here its --help) imports curation/cli/pool.py and no other command's module."""
    res = _python("import sys\nfrom curation.cli import main\n"
                  "try:\n    main(['pool', '--help'], prog_name='golden')\nexcept SystemExit:\n    pass\n"
                  "print(' '.join(sorted(m for m in sys.modules if m.startswith('curation.cli.'))))")
    assert res.returncode == 0, res.stderr
    assert "Pool the top DEPTH documents" in res.stdout
    assert res.stdout.splitlines()[-1].split() == ["curation.cli.base", "curation.cli.pool"]


def test_a_command_in_a_group_imports_its_own_module_only():
    """`golden stats compare --help` imports curation/cli/stats.py only; `golden --help` lists the
    groups without importing the modules of their commands."""
    res = _python("import sys\nfrom curation.cli import main\n"
                  "for args in (['--help'], ['stats', 'compare', '--help']):\n"
                  "    try:\n        main(args, prog_name='golden')\n    except SystemExit:\n        pass\n"
                  "    print('loaded:', *sorted(m for m in sys.modules if m.startswith('curation.cli.')))")
    assert res.returncode == 0, res.stderr
    after_help, after_compare = [line.split()[1:] for line in res.stdout.splitlines() if line.startswith("loaded:")]
    top = ["curation.cli.base", "curation.cli.demo", "curation.cli.guidelines", "curation.cli.leakcheck",
           "curation.cli.machine", "curation.cli.pool", "curation.cli.project",
           "curation.cli.serve"]  # guidelines: under project; machine: a group of its own at the top
    assert after_help == top
    assert after_compare == sorted([*top, "curation.cli.stats"])
