"""Writing a version's files into its folder, whole or not at all."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from curation.export.manifest import ALL_FILES, MANIFEST, folder_order
from curation.formats.fileio import default_mode, write_error


def write_folder(out_dir: Path, version: str, files: dict) -> Path:
    """Write ``files`` into ``out_dir/version`` whole or not at all (temp folder, then rename). A
    file is given as its bytes, as the path of a file already written (linked into place when it is
    on the same file system, else copied), or as a function opening it for reading (copied in
    blocks: a big export is never held in memory). An OS
    error (no space left, no permission, ...) is raised as a ``WriteError`` naming the file of the
    version folder being written, and nothing of the new folder is left."""
    target = out_dir / version
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(exc, target) from exc
    if target.exists():
        if not target.is_dir():
            raise ValueError(f"out_dir: {target} exists and is not a folder; choose another --out")
        names = sorted(p.name for p in target.iterdir())
        # Only a folder holding nothing but export files, whose manifest (when readable) names this
        # version of this project, is replaced: a damaged export is restored, anything else is kept.
        tops = {name.split("/", 1)[0] for name in files}  # the other formats' files and folders too
        ours = set(names) <= set(ALL_FILES) | tops
        if ours and MANIFEST in names:
            try:
                old = json.loads((target / MANIFEST).read_bytes())
                new = json.loads(_read(files[MANIFEST]))
                ours = not isinstance(old, dict) or \
                    (old.get("version"), old.get("project")) == (new.get("version"), new.get("project"))
            except (ValueError, UnicodeDecodeError):
                ours = True
        if names and not ours:
            raise ValueError(
                f"out_dir: {target} already holds files that are not this version's export; "
                "choose another --out or move that folder away"
            )
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
        if target.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{version}.", suffix=".old", dir=out_dir))
            os.rmdir(old)
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OSError):
            raise write_error(exc, writing) from exc
        raise
    return target


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
