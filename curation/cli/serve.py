"""``golden serve``: the judging app under a production WSGI server, granian (the default) or gunicorn.

Either runs the app in ``--workers`` processes, so a team's judges use every core (one Python
process answers on one core at a time). granian (``--server granian``) reads and writes HTTP in
Rust, keeps each judge's connection alive between answers and hands the app one request at a time
per worker thread (``--threads``: 1 on SQLite, 4 on PostgreSQL by default). On the judging load
(20 non-stop judges, SQLite, 2 cores) it answered 1.15-1.34x the judgments a second of gunicorn's
sync worker at 0.5-0.7x the server CPU a request (bench/README.md, issue 29). gunicorn
(``--server gunicorn``) stays for deployments that know it: its sync worker takes a connection only
when it is free and closes it after the answer; with ``--threads`` above 1 its threaded worker
keeps connections alive.

Both servers accept on one listening socket that golden binds itself, before any worker starts,
and every worker inherits: port 0 picks one free port for all of them, and a port another
program (another ``golden serve`` included) already listens on is refused. granian's own way on
Linux, a socket per worker with ``SO_REUSEPORT``, would let a second server on the same port
share its connections without a word.
The app is built once, in the serving process, before any worker starts: a store with an
out-of-date schema is refused with a clear message instead of failing in every worker, and all
workers share one secret key. The workers are forks of that process; each then opens its own
database connections (a connection must not cross a fork; see SQLAlchemy's "Using Connection
Pools with Multiprocessing").
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from curation.cli.base import db_option, main

if TYPE_CHECKING:
    import socket


def default_workers(server: str = "granian") -> int:
    """Worker processes when ``--workers`` is not given. gunicorn's sync worker: one per core plus
    one, 3 to 9 (submit-and-next is CPU-bound Python, and SQLite's single writer gains nothing from
    many more). granian: one per core, at most 8 (it warns above the cores, and a worker's
    kept-alive connections stay with it: on SQLite one worker answered as many judgments a second
    as three, at less CPU each; bench/README.md, issue 29)."""
    cores = os.cpu_count() or 1
    if server == "gunicorn":
        return max(3, min(cores + 1, 9))
    return max(1, min(cores, 8))


def default_threads(server: str, backend: str) -> int:
    """Threads per worker when ``--threads`` is not given: 4 for granian on PostgreSQL, where a
    worker's kept-alive connections wait on the database's round trips (20 non-stop judges: 355
    judgments/s against 244 with one thread, and gunicorn's sync worker's 284); else 1 (SQLite's
    work is CPU-bound Python under one lock, and gunicorn's sync worker takes no threads)."""
    return 4 if server == "granian" and backend == "postgresql" else 1


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that port 0 (any free port) can be reported exactly."""
    import socket

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise click.ClickException(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): pick another port with --port"
        ) from None
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


def describe_workers(workers: int, threads: int) -> str:
    """How the server runs, for its start message: "1 worker process", "4 worker processes x 2 threads"."""
    return (f"{workers} worker process{'' if workers == 1 else 'es'}"
            + (f" x {threads} threads" if threads > 1 else ""))


#: The WSGI servers ``golden serve`` can run, the default first.
SERVERS = ("granian", "gunicorn")
BACKLOG = 2048  # connections the kernel queues before a worker accepts them


def serve_app(app, *, host: str, port: int, workers: int, threads: int, server: str = SERVERS[0],
              echo=click.echo) -> None:
    """Serve ``app`` with ``server`` (one of :data:`SERVERS`) until interrupted (Ctrl+C or SIGTERM),
    after printing where it listens (port 0 picks a free port)."""
    if server not in SERVERS:
        raise click.ClickException(f"unknown server {server!r}: choose one of {', '.join(SERVERS)}")
    sock = _listen(host, port)
    shape = describe_workers(workers, threads)
    echo(f"golden: serving the judging app at http://{host}:{sock.getsockname()[1]}/ "
         f"with {server} ({shape}); Ctrl+C stops it")
    master = os.getpid()
    run = _run_granian if server == "granian" else _run_gunicorn
    try:
        _ready_new_workers_for_a_stop(server)
        run(app, sock, workers, threads, master)
    except SystemExit as exc:
        # Both servers end their processes with sys.exit: a worker (a fork of this one) leaves
        # quietly by the same way; the master also on a clean stop (Ctrl+C, SIGTERM).
        if os.getpid() != master:
            raise
        if exc.code not in (0, None):
            raise click.ClickException(f"{server} stopped with status {exc.code}; see the messages above") from None
    finally:
        if os.getpid() == master:
            _ready_new_workers_for_a_stop(None)
            with contextlib.suppress(OSError):  # the server may have closed it already
                sock.close()
    echo("golden: stopped")


#: While :func:`serve_app` runs its server: that server's name, which a worker forked from it reads
#: in its first instant (:func:`_ready_new_workers_for_a_stop`).
_SERVING_WITH: str | None = None
_AT_FORK_REGISTERED = False


def _ready_new_workers_for_a_stop(server: str | None) -> None:
    """From now on (until called with None), a process forked from this one, a worker of ``server``,
    ends at once and quietly on a stop signal that arrives before its server installs its own
    handlers. Until then the worker runs the serving process's handlers, which only mark the
    worker's copy of the server as stopping: a stop sent to a worker in its first instant (gunicorn:
    before its post_fork hook returns; granian: before it serves) was lost, and the master killed the
    worker after its 5 s graceful timeout (granian: "refused to gracefully stop"; gunicorn: "was sent
    SIGKILL! Perhaps out of memory?"). That worker has accepted no connection yet, so it has nothing
    to finish."""
    global _SERVING_WITH, _AT_FORK_REGISTERED
    _SERVING_WITH = server
    if server is not None and not _AT_FORK_REGISTERED:  # os.register_at_fork has no way back
        os.register_at_fork(after_in_child=_new_worker_signals)
        _AT_FORK_REGISTERED = True


def _new_worker_signals() -> None:
    """In a process just forked (Python's at-fork hook, before any other code of the child runs).

    The stop signals are the ones each server's master sends its workers: granian SIGTERM;
    gunicorn SIGTERM, and SIGQUIT on Ctrl+C, which also reaches its workers as SIGINT. A granian
    worker blocks SIGINT from its fork on: a terminal's Ctrl+C reaches every process of the group,
    the master stops the workers itself (SIGTERM), and a worker that ended on SIGINT first was
    respawned in the middle of the stop and killed 5 s later. The mask is set before granian starts
    the worker's threads, which inherit it."""
    global _SERVING_WITH
    server, _SERVING_WITH = _SERVING_WITH, None  # a fork of the worker is not a worker
    if server is None:
        return
    import signal

    if server == "granian":
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        stops = (signal.SIGTERM,)
    else:
        stops = (signal.SIGTERM, signal.SIGQUIT, signal.SIGINT)
    for signum in stops:
        signal.signal(signum, _leave_before_serving)


def _leave_before_serving(_signum, _frame) -> None:
    """A stop signal in a worker whose server has not yet installed its handlers: end now, with
    status 0 (both masters then take it for a worker that stopped as asked)."""
    os._exit(0)


def _worker_started(app, master: int) -> None:
    """In a new worker process (a fork of ``master``, the serving one), before its first request."""
    import gc

    _stop_without(master)
    # Forget the serving process's pooled connections without closing them (they are its, not
    # this worker's); the worker opens its own on first use.
    app.extensions["golden_engine"].dispose(close=False)
    # What exists now (modules, table metadata, the app) lives as long as the worker: move it out
    # of the collector's view, so a full collection no longer pauses requests.
    gc.collect()
    gc.freeze()


def _run_granian(app, sock: socket.socket, workers: int, threads: int, master: int) -> None:
    """granian's multi-process server (``granian.server.MPServer``, the class its ``Granian`` names
    on a standard CPython) on ``sock``, the app's WSGI interface, its workers forked from here."""
    import multiprocessing

    from granian.constants import Interfaces
    from granian.log import LogLevels
    from granian.net import SocketHolder
    from granian.server import MPServer

    class GoldenGranian(MPServer):
        """MPServer with golden's one listening socket, inherited by every worker (see the module's
        text), in place of a socket per worker."""

        def _init_shared_socket(self):
            self._ssp, self._sso, self._sfd = None, sock, sock.fileno()
            self._shd = SocketHolder(sock.fileno(), False, BACKLOG)

        def _drop_shared_socket(self):
            pass  # serve_app closes the socket

    def load(_target):
        # SIGINT is blocked in the worker from its fork on (_ready_new_workers_for_a_stop)
        _worker_started(app, master)
        return app

    # The workers must be forks of this process: they get the app built here and the socket
    # (granian takes "spawn" where the default is neither fork nor spawn, as from Python 3.14).
    multiprocessing.set_start_method("fork", force=True)
    server = GoldenGranian(
        "golden", address=sock.getsockname()[0], port=sock.getsockname()[1], interface=Interfaces.WSGI,
        workers=workers, blocking_threads=threads, backlog=BACKLOG,
        respawn_failed_workers=True,  # a worker that died is replaced, as gunicorn's master does
        workers_kill_timeout=5,  # on Ctrl+C / SIGTERM: requests in flight may finish
        log_level=LogLevels.warning,
    )
    server.serve(target_loader=load)


#: Seconds between a granian worker's checks that the serving process is still its parent.
MASTER_CHECK_SECONDS = 1.0


def _stop_without(master: int) -> None:
    """In a worker (either server): stop as on SIGTERM once ``master`` is no longer this process's
    parent (killed with SIGKILL, say, so it could not stop its workers). granian's workers would otherwise
    serve on, unseen, holding the port; gunicorn's sync worker checks too, but only between waits
    for a connection of up to half its timeout (30 s)."""
    import signal
    import threading
    import time

    def watch() -> None:
        while os.getppid() == master:
            time.sleep(MASTER_CHECK_SECONDS)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="golden-master-watch", daemon=True).start()


def _run_gunicorn(app, sock: socket.socket, workers: int, threads: int, master: int) -> None:
    """gunicorn on ``sock``: its sync worker, or its threaded one when ``threads`` is above 1."""
    from gunicorn.app.base import BaseApplication

    options = {
        "bind": [f"fd://{sock.fileno()}"],
        "workers": workers,
        "worker_class": "sync",
        "threads": threads,  # above 1, gunicorn runs its threaded ("gthread") worker instead
        "keepalive": 5,  # threaded worker only: an idle connection is kept this many seconds
        "timeout": 60,
        "graceful_timeout": 5,  # on Ctrl+C / SIGTERM: requests in flight may finish
        "post_fork": lambda _server, _worker: _worker_started(app, master),
        "accesslog": None,
        "errorlog": "-",
        "loglevel": "warning",
        "proc_name": "golden",
        "control_socket_disable": True,  # gunicorn >= 25.1: no control socket in the user's $HOME
    }

    class GoldenServer(BaseApplication):
        """gunicorn's documented way to run an app object from Python ("Custom Application")."""

        def load_config(self):
            for key, value in options.items():
                if key in self.cfg.settings:
                    self.cfg.set(key, value)

        def load(self):
            return app

    GoldenServer().run()


def build_app(db_url: str | None, **config):
    """The judging app for ``db_url`` (``config``: more settings of :func:`judging_app.create_app`);
    an out-of-date schema becomes a clean CLI error."""
    from curation.store.migrate import SchemaError
    from judging_app import create_app

    if db_url and "://" not in db_url:  # a plain path means a SQLite file
        db_url = f"sqlite:///{Path(db_url).resolve()}"
    if db_url:
        config["DATABASE_URL"] = db_url
    try:
        return create_app(config or None)
    except SchemaError as exc:
        raise click.ClickException(str(exc)) from None
    except ValueError as exc:  # a GOLDEN_SESSION_* variable that is not a number of hours
        raise click.ClickException(str(exc)) from None


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (0.0.0.0 for every interface).")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535),
              help="Port to listen on (0: any free port, printed at start).")
@db_option
@click.option("--workers", type=click.IntRange(1, 64), default=None,
              help="Worker processes (default: granian one per core, at most 8; gunicorn one per core plus "
                   "one, 3 to 9).")
@click.option("--threads", default=None, type=click.IntRange(1, 256),
              help="Threads per worker process that run the app; above 1, a worker goes on while a request "
                   "waits on PostgreSQL [default: 4 for granian on PostgreSQL, else 1].")
@click.option("--server", type=click.Choice(SERVERS), default=SERVERS[0], show_default=True,
              help="The WSGI server: granian keeps each judge's connection alive and parses HTTP in Rust; "
                   "gunicorn's sync worker closes a connection after each answer (its threaded worker, "
                   "with --threads above 1, keeps them).")
@click.option("--secure-cookies", is_flag=True, envvar="GOLDEN_SECURE_COOKIES",
              help="Behind HTTPS: mark the session cookie Secure and send HSTS (env GOLDEN_SECURE_COOKIES=1).")
@click.option("--proxy-headers", is_flag=True, envvar="GOLDEN_PROXY_HEADERS",
              help="Behind one reverse proxy: take the client address and scheme from its X-Forwarded-For and "
                   "X-Forwarded-Proto (env GOLDEN_PROXY_HEADERS=1). Never when clients reach golden directly.")
@click.option("--session-idle-hours", type=click.FloatRange(0, 24 * 366, min_open=True), default=None,
              envvar="GOLDEN_SESSION_IDLE_HOURS",
              help="A login ends after this long without a request [default: 8].")
@click.option("--session-max-hours", type=click.FloatRange(0, 24 * 366, min_open=True), default=None,
              envvar="GOLDEN_SESSION_MAX_HOURS",
              help="A login ends this long after logging in, however active [default: 168, a week].")
def serve_cmd(host: str, port: int, db_url: str | None, workers: int | None, threads: int | None, server: str,
              secure_cookies: bool, proxy_headers: bool, session_idle_hours: float | None,
              session_max_hours: float | None):
    """Serve the judging app so judges can label pairs in the browser.

    Runs a production WSGI server (granian by default, or gunicorn; not Flask's development
    server) with several worker processes so that every core answers judges. The app refuses to
    start on a store whose schema is out of date and says which command to run. Put it behind a
    reverse proxy (nginx, Caddy) that terminates HTTPS when it is reachable from outside your
    network, and serve with --secure-cookies --proxy-headers there (docs/deployment.md: "Deployment behind HTTPS").

    Sessions, login throttling, the audit trail and the cookie-signing key live in the store, so
    several `golden serve` processes on one PostgreSQL store act as one.

    \b
    Example:
      golden serve --db sqlite:///golden.db --port 8000
      golden serve --host 127.0.0.1 --port 8000 --secure-cookies --proxy-headers   # behind nginx/Caddy
    """
    config: dict = {}
    if secure_cookies:
        config["SECURE_COOKIES"] = True
    if proxy_headers:
        config["PROXY_HEADERS"] = True
    if session_idle_hours is not None:
        config["SESSION_IDLE_SECONDS"] = int(session_idle_hours * 3600)
    if session_max_hours is not None:
        config["SESSION_MAX_SECONDS"] = int(session_max_hours * 3600)
    app = build_app(db_url, **config)
    backend = app.extensions["golden_engine"].dialect.name
    serve_app(app, host=host, port=port, workers=workers or default_workers(server),
              threads=threads or default_threads(server, backend), server=server)
