"""The versions page: leads and admins see every exported version with its manifest and changes,
and download any version as the deterministic zip frozen in the store (byte for byte the same on
every download). Judges get a 403: manifests name judges and carry agreement figures. A version's
page says what it lacks: the pooled pairs left unjudged, unresolved disagreements, undecided leak
findings, and how much of each pooled run's top-10 it judges (a warning below 90%).
"""

from __future__ import annotations

import json

from flask import Blueprint, Response, abort, render_template

from curation.evaluate.version_compare import COVERAGE_WARN_BELOW, version_coverage
from curation.export.manifest import ALL_FILES, MANIFEST
from curation.export.versions_page import version_files, versions_overview

from .auth import lead_required
from .db import get_db

bp = Blueprint("versions", __name__, url_prefix="/versions")

@bp.get("/")
@lead_required
def index():
    return render_template("versions/index.html", versions=versions_overview(get_db()))


def _version_or_404(project: str, version: str):
    try:
        return version_files(get_db(), project, version)
    except ValueError:
        abort(404)


@bp.get("/<project>/<version>")
@lead_required
def detail(project: str, version: str):
    info, files, _ = _version_or_404(project, version)
    return render_template(
        "versions/detail.html",
        info=info,
        coverage=version_coverage(get_db(), project, version),
        warn_below=COVERAGE_WARN_BELOW,
        incomplete=info.manifest.get("incomplete") or {},
        undecided_leaks=(info.manifest.get("leak_check") or {}).get("undecided") or {},
        manifest_text=files[MANIFEST].decode("utf-8"),
        changes_text=files.get("CHANGES.md", b"").decode("utf-8"),
        files=[(name, len(files[name]), info.manifest.get("files", {}).get(name, {}).get("sha256"))
               for name in ALL_FILES if name in files],
    )


@bp.get("/<project>/<version>.zip")
@lead_required
def download(project: str, version: str):
    info, _, archive = _version_or_404(project, version)
    filename = f"{info.project}-{info.name}.zip".replace('"', "")
    return Response(
        archive,
        mimetype="application/zip",
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "ETag": f'"{info.zip_sha256}"',
            "X-Content-SHA256": info.zip_sha256,
            "Cache-Control": "private, max-age=0",
        },
    )


@bp.app_template_filter("pretty_json")
def pretty_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)
