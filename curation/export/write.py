"""Writing a version's files into its folder, whole or not at all."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from pathlib import Path

from curation.export.formats import TOP_NAMES
from curation.export.manifest import ALL_FILES, MANIFEST, folder_order
from curation.formats.fileio import default_mode, write_error

FORMAT_TOPS = set(TOP_NAMES.values())  # what the other formats add at the top of a version folder


def write_folder(out_dir: Path, version: str, files: dict) -> Path:
    """Write ``files`` into ``out_dir/version`` whole or not at all (temp folder, then rename), never
    replacing a folder that is there: a folder already holding exactly these files is left as it is
    (nothing written), any other is refused (:class:`FolderInTheWay`). A file is given as its bytes,
    as the path of a file already written (linked into place when it is on the same file system,
    else copied), or as a function opening it for reading (copied in blocks: a big export is never
    held in memory). An OS error (no space left, no permission, ...) is raised as a ``WriteError``
    naming the file of the version folder being written, and nothing of the new folder is left."""
    target = out_dir / version
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(exc, target) from exc
    if os.path.lexists(target):
        check_in_place(target, version, files)
        return target
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{version}.", suffix=".tmp", dir=out_dir))
    except OSError as exc:
        raise write_error(exc, target) from exc
    writing = target
    try:
        os.chmod(tmp, default_mode(directory=True))  # mkdtemp makes it 0700
        for name in folder_order(files):
            writing = target / name
            if "/" in name:  # a format's folder (hf/data/...)
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                for sub in (tmp / name).relative_to(tmp).parents:
                    if str(sub) != ".":
                        os.chmod(tmp / sub, default_mode(directory=True))
            _put(files[name], tmp / name)
        writing = target
        if os.path.lexists(target):  # it appeared meanwhile: never replaced
            check_in_place(target, version, files)
            shutil.rmtree(tmp, ignore_errors=True)
            return target
        os.rename(tmp, target)  # an empty folder made meanwhile is the only thing rename may replace
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise write_error(exc, writing) from exc
        raise
    return target


class FolderInTheWay(ValueError):
    """The version's folder is there and does not hold exactly the version's files: golden never
    replaces it."""


def same_files(folder: Path, files: dict) -> bool:
    """True when ``folder`` holds exactly the files of ``files`` (names and bytes, compared in blocks)."""
    try:
        names = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()}
    except OSError:
        return False
    if names != set(files):  # a format's folder (hf/data/...) by its files' paths
        return False
    for name, src in files.items():
        try:
            with open(folder / name, "rb") as have, _opened(src) as want:
                while True:
                    a, b = have.read(1 << 20), want.read(1 << 20)
                    if a != b:
                        return False
                    if not a:
                        break
        except OSError:
            return False
    return True


def check_in_place(target: Path, version: str, files: dict) -> None:
    """Nothing to do when ``target`` holds exactly ``files``; else :class:`FolderInTheWay`, saying
    what is there and how to go on."""
    if target.is_dir() and not target.is_symlink() and same_files(target, files):
        return
    if not target.is_dir():
        raise FolderInTheWay(f"out_dir: {target} exists and is not a folder; choose another --out")
    names = sorted(p.name for p in target.iterdir())
    tops = {name.split("/", 1)[0] for name in files}  # the other formats' files and folders too
    if not names or not set(names) <= set(ALL_FILES) | tops:
        what = "is an empty folder" if not names else "already holds files that are not this version's export"
        raise FolderInTheWay(f"out_dir: {target} {what}; golden never replaces a folder: choose another --out "
                             "or move that folder away")
    found = export_of(target)
    same = found is None or found[0] == version  # an unreadable manifest: a damaged export
    which = f"an export of {version} that differs from the stored one (damaged, or from another store)" \
        if same else "files that are not this version's export"
    raise FolderInTheWay(
        f"out_dir: {target} already holds {which}; golden never replaces an export folder: move it away "
        f"(`golden export verify {target}` says what differs), then "
        f"`golden export create --version {version} --frozen` "
        "writes the stored version"
    )


def export_of(folder: Path) -> tuple[str | None, str | None] | None:
    """(version, project) named by the manifest of a folder holding only export files, else None."""
    try:
        names = {p.name for p in folder.iterdir()}
        if MANIFEST not in names or not names <= set(ALL_FILES) | FORMAT_TOPS:
            return None
        old = json.loads((folder / MANIFEST).read_bytes())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return (old.get("version"), old.get("project")) if isinstance(old, dict) else None


@contextlib.contextmanager
def _opened(src):
    if isinstance(src, bytes):
        yield io.BytesIO(src)
    elif isinstance(src, (str, os.PathLike)):
        with open(src, "rb") as fh:
            yield fh
    else:
        with src() as fh:
            yield fh


def _read(src) -> bytes:
    if isinstance(src, bytes):
        return src
    if isinstance(src, (str, os.PathLike)):
        return Path(src).read_bytes()
    with src() as fh:
        return fh.read()


def _put(src, dest: Path) -> None:
    if isinstance(src, (str, os.PathLike)):
        try:
            os.link(src, dest)  # a spooled file on the same file system: no copy
        except OSError:
            shutil.copyfile(src, dest)
        with open(dest, "rb+") as fh:
            os.fsync(fh.fileno())
        os.chmod(dest, default_mode())
        return
    with open(dest, "wb") as fh:
        if isinstance(src, bytes):
            fh.write(src)
        else:
            with src() as reader:
                shutil.copyfileobj(reader, fh, 1 << 20)
        fh.flush()
        os.fsync(fh.fileno())
