"""The versions page: leads and admins see every exported version with its manifest and changes,
and download any version as the deterministic zip frozen in the store (byte for byte the same on
every download). Judges get a 403: manifests name judges and carry agreement figures. A version's
page says what it lacks: the pooled pairs left unjudged, unresolved disagreements, undecided leak
findings, and how much of each pooled run's top-10 it judges (a warning below 90%).
"""

from __future__ import annotations

import json
import unicodedata

from flask import Blueprint, abort, g, render_template, send_file

from curation.export.manifest import MANIFEST, folder_order
from curation.export.version_compare import COVERAGE_WARN_BELOW, version_coverage
from curation.export.versions_page import version_files, versions_overview
from curation.store.audit import record_audit

from .auth import lead_required
from .db import engine, get_db

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


@bp.get("/<name:project>/<version>")  # a name may hold "/" (older stores)
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
        files=[(name, files.size(name), info.manifest.get("files", {}).get(name, {}).get("sha256"))
               for name in folder_order(files)],
    )


@bp.get("/<name:project>/<version>.zip")
@lead_required
def download(project: str, version: str):
    info, _, open_zip = _version_or_404(project, version)
    # werkzeug's send_file writes Content-Disposition with an ASCII ``filename`` and, for any other
    # name, RFC 5987's ``filename*=UTF-8''...``; control characters (a newline) cannot be in a header
    # at all, and "/" would be a folder, so those become "_".
    filename = download_name(f"{info.project}-{info.name}.zip")
    record_audit(get_db(), "download", actor=g.user, target=f"{info.project} {info.name}", commit=True)
    # The zip is read from the store's chunks as it is sent, on a session of its own that closes with
    # the file once the last byte is sent: never held whole.
    reader = open_zip(engine())
    response = send_file(reader, mimetype="application/zip", as_attachment=True,
                         download_name=filename, etag=info.zip_sha256, max_age=0, conditional=True)
    if response.status_code == 200:
        response.content_length = info.zip_bytes
    else:  # 304: nothing to send
        reader.close()
    response.headers["X-Content-SHA256"] = info.zip_sha256
    response.cache_control.private = True
    response.cache_control.public = False
    return response


def download_name(name: str) -> str:
    """``name`` made safe as a file name in a header: control characters, "/" and "\\" become "_"."""
    return "".join("_" if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") or ch in '/\\"' else ch
                   for ch in name)


@bp.app_template_filter("pretty_json")
def pretty_json(value) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)
