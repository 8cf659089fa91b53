"""The root ``golden`` group and options shared by several commands."""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import math
import os
import sys

import click

from curation import __version__

# The exit codes of every command (docs/reference/exit-codes-and-limits.md): 0 done; 1 an error in the
# input, the store's state or the environment (a file, the disk, the database); 2 a usage error
# (click's); 3 a leak found with `golden leakcheck --fail-on-leak`; 4 the null arm of `golden stats
# noise` failed; 70 a bug in golden (EX_SOFTWARE of sysexits.h), asking for a report.
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_LEAK, EXIT_NULL_ARM, EXIT_BUG = 0, 1, 2, 3, 4, 70
DEBUG_ENV = "GOLDEN_DEBUG"


class BugError(click.ClickException):
    """An exception golden did not expect, shown as one line asking for a bug report (exit 70)."""

    exit_code = EXIT_BUG


def error_line(exc: BaseException, command: str) -> tuple[str, int]:
    """The one line (without click's "Error: ") and the exit code for an exception a command raised.

    Bad input (``ValueError``, which includes ``InputError``) and a failed environment (``OSError``:
    a full disk, a permission, a missing folder; an unreachable or locked database) exit 1 naming
    the path and the cause; anything else is a bug in golden (exit 70)."""
    if isinstance(exc, OSError):
        from curation.formats.fileio import WriteError

        cause = exc.strerror or str(exc) or type(exc).__name__
        if isinstance(exc, WriteError):
            return f"cannot write {exc.filename}: {cause}", EXIT_ERROR
        if exc.filename is not None:
            other = f" -> {exc.filename2}" if exc.filename2 is not None else ""
            return f"{exc.filename}{other}: {cause}", EXIT_ERROR
        return f"{command}: {cause}", EXIT_ERROR
    if isinstance(exc, ValueError):
        return str(exc), EXIT_ERROR
    if isinstance(exc, EOFError):  # gzip and friends: the compressed stream stops early
        return f"{command}: an input file ends too early (a truncated compressed file?): {exc}", EXIT_ERROR
    if isinstance(exc, MemoryError):
        return f"{command}: out of memory", EXIT_ERROR
    if type(exc).__module__ == "sqlalchemy.exc" and type(exc).__name__ in ("OperationalError", "InterfaceError"):
        orig = getattr(exc, "orig", None) or exc
        first = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
        return f"cannot use the store: {first}", EXIT_ERROR
    detail = (str(exc).strip().splitlines() or [""])[0]  # e.g. a database error's SQL follows on other lines
    return (
        f"{command}: unexpected {type(exc).__name__}: {detail}. This is a bug in golden {__version__}; please "
        f"report it with the command you ran ({DEBUG_ENV}=1 shows the traceback)",
        EXIT_BUG,
    )


def _debug_traceback() -> None:
    """Print the traceback of the exception being handled to stderr when ``GOLDEN_DEBUG`` is set."""
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        import traceback

        traceback.print_exc(file=sys.stderr)


def _command_words(ctx: click.Context) -> list[str]:
    """The words of the command being run, as typed: ``golden stats compare`` (an old name as given)."""
    words = []
    while ctx is not None:
        words.append(ctx.info_name if ctx.parent is not None else "golden")
        ctx = ctx.parent
    return words[::-1]


def note_new_name(old: str, new: str) -> None:
    """Tell the user, once on stderr, the new name of a command they ran by its old one."""
    click.echo(f"golden: `golden {old}` is now `golden {new}`; the old name still works for now.", err=True)


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: raised in the main thread, as SIGINT raises ``KeyboardInterrupt``,
    so that every ``finally`` and ``except BaseException`` on the way out runs (temporary files and
    spool folders removed, the store's transaction rolled back)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def unwind_on_signals():
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` (SIGINT already raises
    ``KeyboardInterrupt``); a second one while unwinding is ignored, so the clean-up finishes. When
    :class:`Terminated` leaves the block, the process ends by the same signal with its default action
    (exit status 128 + the signal, as without golden's handler). A process forked inside the block (a
    scan worker) keeps the default action. Outside the main thread the block changes nothing."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    owner = os.getpid()
    signals = [signal.SIGTERM] + ([signal.SIGHUP] if hasattr(signal, "SIGHUP") else [])

    def handler(signum, frame):
        if os.getpid() != owner:  # a forked worker: end as the signal says
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        for s in signals:
            signal.signal(s, signal.SIG_IGN)
        raise Terminated(signum)

    previous = {s: signal.signal(s, handler) for s in signals}
    try:
        yield
    except Terminated as exc:
        signal.signal(exc.signum, signal.SIG_DFL)
        sys.stderr.flush()
        os.kill(os.getpid(), exc.signum)
        raise  # not reached when the signal's default action ends the process
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


class GoldenGroup(click.Group):
    """The one error path of every command: whatever a command raises reaches the user as one line
    and an exit code (:func:`error_line`), never a traceback, unless ``GOLDEN_DEBUG=1`` asks for it.
    Its commands come from a :class:`CommandTable`, listed in the table's order."""

    def __init__(self, *args, table: CommandTable | None = None, path: str = "", **kwargs):
        super().__init__(*args, **kwargs)
        self.table, self.path = table, path

    def invoke(self, ctx: click.Context):
        try:
            with unwind_on_signals():
                return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Abort, click.exceptions.Exit):
            raise
        except Exception as exc:
            if isinstance(exc, OSError) and exc.errno == errno.EPIPE:
                raise  # `golden ... | head`: click ends quietly
            _debug_traceback()
            command = " ".join(_command_words(ctx) + ([ctx.invoked_subcommand] if ctx.invoked_subcommand else []))
            message, code = error_line(exc, command)
            error = BugError(message) if code == EXIT_BUG else click.ClickException(message)
            raise error from None

    def list_commands(self, ctx):
        return list(self.commands)  # in the table's order, not sorted

    def get_command(self, ctx, cmd_name):
        """The command ``cmd_name`` under this group; at the top, an old name gives the command it
        became, after the note."""
        command = super().get_command(ctx, cmd_name)
        if command is None and self.table is not None and not self.path and cmd_name in self.table.aliases:
            new = self.table.aliases[cmd_name]
            note_new_name(cmd_name, new)
            command = self.table.command(new)
        return command

    def parse_args(self, ctx, args):
        """An old command whose name is now this group's (``golden export --version v5``, ``golden
        sample log.csv ...``) runs the command it became, after the note: arguments that do not start
        with one of the group's commands, or its help option, are the old command's."""
        new = self.table.aliases.get(self.path) if self.table is not None and self.path else None
        if new and args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            note_new_name(self.path, new)
            args = [new.split()[-1], *args]
        return super().parse_args(ctx, args)


class CommandTable:
    """Where each command sits under ``golden`` (``curation.cli.COMMANDS``), and the commands
    themselves, each imported when it is first asked for.

    ``commands`` maps a command's path (``"stats compare"``, ``"demo"``) to the module of
    curation/cli that defines it and the name the module registers it under
    (``@main.command("compare")``, which lands here through :meth:`place`); ``groups`` gives the
    help of each group of the pipeline; ``aliases`` maps each old name to its path."""

    def __init__(self, package: str, commands: dict[str, tuple[str, str]], groups: dict[str, str],
                 aliases: dict[str, str]):
        self.package, self.paths, self.groups, self.aliases = package, commands, groups, aliases
        self._path_of = {registered: path for path, (_, registered) in commands.items()}
        self._placed: dict[str, click.Command] = {}
        self._built: dict[str, click.Command] = {}

    def children(self, path: str) -> list[str]:
        """The names directly under ``path`` ("" for the top), in the table's order."""
        depth = len(path.split())
        return list(dict.fromkeys(p.split()[depth] for p in self.paths
                                  if p.split()[:depth] == path.split() and len(p.split()) > depth))

    def place(self, registered: str, command: click.Command) -> bool:
        """Keep a command a module registered; False when the table does not know its name."""
        if registered not in self._path_of:
            return False
        path = self._path_of[registered]
        command.name = path.split()[-1]  # the name the help and the docs show
        self._placed[path] = command
        return True

    def command(self, path: str) -> click.Command | None:
        """The command (or group) at ``path``, importing its module the first time."""
        if path in self._built:
            return self._built[path]
        if path in self.groups:
            built = GoldenGroup(path, help=self.groups[path], table=self, path=path,
                                context_settings={"max_content_width": 100})
            built.commands = LazyCommands(self, path)
        elif path in self.paths:
            import importlib

            importlib.import_module(f"{self.package}.{self.paths[path][0]}")
            built = self._placed[path]
            for child in self.children(path):  # a group a module defines, with commands of other modules
                built.add_command(self.command(f"{path} {child}"), child)
        else:
            return None
        self._built[path] = built
        return built


class LazyCommands(dict):
    """The ``commands`` of ``golden`` and of each group: the names under its path in the
    :class:`CommandTable`, each command's module imported when the command is asked for by name
    (``golden pool`` imports curation/cli/pool.py and no other command's module), and the modules
    of its commands when they are listed (``golden stats --help``, iterating, ``len``). A module
    registering a command on ``main`` (``@main.command(NAME)``) puts it in its place in the table;
    a command the table does not know stays where it was registered."""

    def __init__(self, table: CommandTable, path: str = ""):
        super().__init__()
        self.table, self.path = table, path

    def _path(self, name: str) -> str:
        return f"{self.path} {name}".strip()

    def _names(self) -> list[str]:
        placed = self.table.children(self.path)
        return [*placed, *(n for n in dict.keys(self) if n not in placed)]

    def __setitem__(self, name, command):
        if self.path or not self.table.place(name, command):
            super().__setitem__(name, command)

    def __getitem__(self, name):
        if dict.__contains__(self, name):
            return super().__getitem__(name)
        command = self.table.command(self._path(name)) if name in self.table.children(self.path) else None
        if command is None:
            raise KeyError(name)
        return command

    def get(self, name, default=None):
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name):
        return name in self.table.children(self.path) or super().__contains__(name)

    def __iter__(self):
        return iter(self._names())

    def __len__(self):
        return len(self._names())

    def keys(self):
        return self._names()

    def values(self):
        return [self[n] for n in self._names()]

    def items(self):
        return [(n, self[n]) for n in self._names()]


@click.group(cls=GoldenGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="golden")
def main():
    """golden: build the golden set a retrieval evaluation stands on.

    \b
    The path, in order:
      golden sample queries  search log   -> stratified query set (queries.jsonl)
      golden pool            system runs  -> blind judging pool (pool.jsonl)
      golden serve           judges label pairs in the browser
      golden export create   versioned, immutable qrels with a manifest

    Run `golden demo` to see the whole path on generated data, and
    `golden COMMAND --help` for each command or group, with an example.
    """


SEED_HELP = "Random seed; the same seed gives the same output."
PROJECT_HELP = "Project name (default: the only project in the store; needed when it holds several)."
JSON_HELP = "Print the result as JSON instead of text, for scripts."


def _option(decorator, func):
    """Let an option decorator be used bare (``@seed_option``) or called (``@seed_option(help_text=...)``)."""
    return decorator if func is None else decorator(func)


def seed_option(func=None, *, help_text: str = SEED_HELP):
    """``--seed N`` (default 0): every random choice is reproducible byte for byte from it. Only the
    help may say what the seed decides in a command."""
    return _option(click.option("--seed", type=int, default=0, show_default=True, help=help_text), func)


def project_option(func=None, *, help_text: str = PROJECT_HELP):
    """``--project NAME``: the project a command works on. Only where naming a project switches
    something on (coverage, leakcheck) does the help say so instead."""
    return _option(click.option("--project", "project_name", metavar="NAME", default=None, help=help_text), func)


def json_option(func):
    """``--json``: the command prints its result with :func:`echo_json` instead of text."""
    return click.option("--json", "as_json", is_flag=True, help=JSON_HELP)(func)


def echo_json(obj) -> None:
    """Print ``obj`` as indented UTF-8 JSON: NaN and infinity become null (JSON has neither), numpy
    values their Python equivalents, anything else unknown its string."""

    def clean(o):
        if hasattr(o, "tolist"):  # numpy arrays and scalars, without importing numpy here
            o = o.tolist()
        if isinstance(o, float) and not math.isfinite(o):
            return None
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    click.echo(json.dumps(clean(obj), indent=2, default=str, ensure_ascii=False))


def domain_errors(func):
    """Turn bad-input errors from the domain layer into a clean CLI error (exit 1), no traceback
    (``GOLDEN_DEBUG=1`` prints it). ``ValueError`` includes ``curation.formats.fileio.InputError``
    (``path:line: message``), which is not imported here so that starting the CLI loads no file
    helpers. Whatever else a command raises is answered by :class:`GoldenGroup`."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except ValueError as exc:
            _debug_traceback()
            raise click.ClickException(str(exc)) from None

    return wrapper


def db_option(func):
    """``--db URL``: the project store (default: ``DATABASE_URL``, else ``golden.db`` here)."""
    return click.option(
        "--db",
        "db_url",
        metavar="URL",
        envvar="DATABASE_URL",
        default=None,
        help="Database URL (sqlite:///path.db or postgresql://...); default: $DATABASE_URL, else ./golden.db.",
    )(func)


def open_db(db_url: str | None, *, check: bool = True):
    """An engine on the store, refusing (with the command to run) one whose schema is out of date."""
    from curation.store.migrate import SchemaError, open_store

    if db_url and "://" not in db_url:  # a plain path means a SQLite file
        db_url = f"sqlite:///{os.path.abspath(db_url)}"
    try:
        return open_store(db_url, check=check)
    except SchemaError as exc:
        raise click.ClickException(str(exc)) from None


@contextlib.contextmanager
def store_session(db_url: str | None, *, check: bool = True):
    """A session on the store (see :func:`open_db`), its engine disposed when the block ends."""
    from curation.store.engine import session

    engine = open_db(db_url, check=check)
    try:
        with session(engine) as s:
            yield s
    finally:
        engine.dispose()


ON_CONFLICT_HELP = (
    "A key repeated in one file with a different value (a qrels pair with two grades, a qid or a "
    "corpus id with two texts): error refuses the file naming both lines; first or last keeps that "
    "one. Identical repeats are always read once and counted in the summary."
)


def on_conflict_option(func=None, *, expose: bool = True):
    """``--on-conflict error|first|last`` (default error): the policy of
    :mod:`curation.formats.conflicts` for conflicting repeated records, passed as ``on_conflict``;
    with ``expose=False`` kept in ``click.get_current_context().meta["on_conflict"]`` instead, for
    commands that read it in a shared loader."""

    def remember(ctx, param, value):
        ctx.meta["on_conflict"] = value
        return value

    return _option(click.option("--on-conflict", "on_conflict", type=click.Choice(["error", "first", "last"]),
                                default="error", show_default=True, help=ON_CONFLICT_HELP, expose_value=expose,
                                callback=None if expose else remember), func)


class FiniteFloat(click.ParamType):
    """A float option that must be finite (no NaN, inf or overflow such as 1e400), and at least
    ``minimum`` when given: ``--tie`` and other thresholds."""

    name = "number"

    def __init__(self, minimum: float | None = None):
        self.minimum = minimum

    def convert(self, value, param, ctx):
        if isinstance(value, float) and math.isfinite(value):
            number = value
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.minimum is not None and number < self.minimum:
            self.fail(f"{value!r} is below {self.minimum:g}; give a finite number >= {self.minimum:g}", param, ctx)
        return number


def pool_files(path: str) -> list[str]:
    """A pool file and the ``pool.meta.json`` beside it (:func:`curation.formats.pool_file.pool_meta_path`)."""
    from curation.formats.pool_file import pool_meta_path

    return [path, str(pool_meta_path(path))]


def run_files(arg: str) -> list[str]:
    """The file of a ``PATH`` or ``NAME=PATH`` run argument."""
    if os.path.exists(arg):
        return [arg]
    name, sep, path = arg.partition("=")
    return [path] if sep and name else [arg]


def glob_files(arg: str) -> list[str]:
    """A path, or the files a quoted glob pattern names (``golden sample queries``'s LOG)."""
    import glob

    if not os.path.exists(arg) and glob.has_magic(arg):
        return sorted(glob.glob(arg, recursive=True))
    return [arg]


def checked_paths(*, inputs=(), outputs=(), stdout=()):
    """Declare a command's input and output path parameters; before the command does any work, an
    output that is one of its inputs or their side files, another output, a folder, a FIFO or a device
    node is refused as a usage error (:func:`curation.formats.fileio.check_outputs`).

    ``inputs`` and ``outputs`` name parameters, each either ``"name"`` or ``("name", files)`` where
    ``files(value)`` gives the paths a value stands for (the file and its side files, e.g.
    :func:`pool_files`); a parameter may hold one path or several (``multiple``/``nargs``).
    ``stdout`` names the outputs that may be ``-`` for standard output."""

    def spec(entry):
        return (entry, None) if isinstance(entry, str) else entry

    def paths(value, files):
        values = value if isinstance(value, (list, tuple)) else [value]
        out = []
        for v in values:
            if v is None or v == "":
                continue
            out.extend(files(str(v)) if files is not None and str(v) != "-" else [str(v)])
        return out

    def decorator(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            from curation.formats.fileio import OutputClash, check_outputs

            labels = {}
            ctx = click.get_current_context(silent=True)
            if ctx is not None:
                for p in ctx.command.params:
                    metavar = (p.metavar or p.name.upper()).rstrip(".")
                    labels[p.name] = p.opts[0] if isinstance(p, click.Option) else metavar

            def each(entries):
                for n, f in map(spec, entries):
                    values = kwargs.get(n)
                    for v in values if isinstance(values, (list, tuple)) else [values]:
                        for i, p in enumerate(paths(v, f)):
                            yield n, (labels.get(n, n) if i == 0 else f"{labels.get(n, n)}'s side file"), p

            ins = [(label, p) for _, label, p in each(inputs)]
            outs = [(label, p, n in stdout) for n, label, p in each(outputs)]
            try:
                check_outputs(outs, ins)
            except OutputClash as exc:
                raise click.UsageError(str(exc), ctx) from None
            return func(*args, **kwargs)

        return wrapper

    return decorator


def db_files(url: str) -> list[str]:
    """The files of a SQLite store (``--db``: a URL or a plain path), with its journal, WAL and
    shared-memory side files; none for a server database."""
    if not url:
        url = os.environ.get("DATABASE_URL") or "golden.db"
    if "://" not in url:
        path = url
    elif url.startswith("sqlite:///"):
        path = url[len("sqlite:///"):].split("?", 1)[0]
    else:
        return []
    if not path or path == ":memory:":
        return []
    return [path] + [path + side for side in ("-journal", "-wal", "-shm")]
