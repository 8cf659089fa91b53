"""``golden labels calibrate --html``: the lead panel's fragment (``templates/lead/_machine.html``) in a
self-contained page, rendered by Jinja with autoescape on (names, strata and run names are data)."""

from __future__ import annotations


def render_report_page(report: dict) -> str:
    """The calibration report (``CalibrationReport.as_dict()``) as one HTML page."""
    from jinja2 import Environment, FileSystemLoader, select_autoescape

    from judging_app import asset_dir

    env = Environment(loader=FileSystemLoader(str(asset_dir("templates"))),
                      autoescape=select_autoescape(default=True, default_for_string=True))
    return env.get_template("machine/report.html").render(r=report)
