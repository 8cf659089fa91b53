"""``golden serve``: the judging app under waitress, a production WSGI server."""

from __future__ import annotations

from pathlib import Path

import click

from .base import db_option, main


def serve_app(app, *, host: str, port: int, threads: int, echo=click.echo) -> None:
    """Serve ``app`` with waitress until interrupted, after printing where it listens (port 0
    picks a free port)."""
    import faulthandler
    import gc
    import signal

    from waitress.server import create_server

    # What exists now (modules, table metadata, the app) lives as long as the server: move it out of
    # the collector's view, so a full collection no longer pauses every thread for ~100 ms.
    gc.collect()
    gc.freeze()
    if hasattr(signal, "SIGUSR1"):  # `kill -USR1 PID` prints every thread's stack to stderr
        try:
            faulthandler.register(signal.SIGUSR1, all_threads=True)
        except (ValueError, OSError):  # stderr is not a real file (e.g. under a test runner)
            pass

    try:
        server = create_server(app, host=host, port=port, threads=threads, ident="golden")
    except OSError as exc:
        raise click.ClickException(
            f"cannot listen on {host}:{port} ({exc.strerror or exc}): pick another port with --port"
        ) from None
    echo(f"golden: serving the judging app at http://{host}:{server.effective_port}/ "
         f"with waitress ({threads} threads); Ctrl+C stops it")
    try:
        server.run()
    except KeyboardInterrupt:
        echo("golden: stopped")
    finally:
        server.close()


def build_app(db_url: str | None):
    """The judging app for ``db_url``; an out-of-date schema becomes a clean CLI error."""
    from judging_app import create_app
    from ..migrate import SchemaError

    if db_url and "://" not in db_url:  # a plain path means a SQLite file
        db_url = f"sqlite:///{Path(db_url).resolve()}"
    try:
        return create_app({"DATABASE_URL": db_url} if db_url else None)
    except SchemaError as exc:
        raise click.ClickException(str(exc)) from None


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0 for every interface).")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
@db_option
@click.option("--threads", default=8, show_default=True, type=click.IntRange(1, 256), help="Worker threads.")
def serve(host: str, port: int, db_url: str | None, threads: int):
    """Serve the judging app so judges can label pairs in the browser.

    Runs waitress, a production WSGI server, not Flask's development server. The app refuses to
    start on a store whose schema is out of date and says which command to run.

    \b
    Example:
      golden serve --db sqlite:///golden.db --port 8000
    """
    app = build_app(db_url)
    serve_app(app, host=host, port=port, threads=threads)
