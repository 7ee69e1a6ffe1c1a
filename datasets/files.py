"""Local, checksum-verified copies of the published dataset files.

Each file lives at ``<data dir>/<folder>/<publisher's file name>``; the data directory is the
``--data-dir`` option, else ``$DPBENCH_DATA_DIR``, else ``./data``. A file is accepted only if the
sha256 of its *content* (decompressed bytes for ``.gz``, since mirrors re-compress) matches. When a
file is missing and downloads are allowed (``DPBENCH_OFFLINE`` unset), it is downloaded from its
canonical URL to a temporary name, verified, and renamed into place (atomic; the cache is then
the data directory). Otherwise a one-line error names the file, its source and where to put it.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import tempfile
import urllib.error
import urllib.request
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from bench.core.data import DataError

from bench.core.paths import DATA_DIR_VARIABLE, OFFLINE_VARIABLE, data_folder, offline
from bench.core.walls import refuse_inside_fit

DOWNLOAD_TIMEOUT_S = 60
_CHUNK = 1 << 20


class DataFileError(DataError):
    """A dataset file is missing, corrupt or could not be downloaded; the message says the fix."""


@dataclass(frozen=True)
class DataFile:
    folder: str
    filename: str
    sha256: str | None  # of the content (decompressed bytes for .gz); None = not pinned yet
    url: str | None
    source: str
    manual: str | None = None


def content_sha256(path: Path, gzipped: bool) -> str:
    digest = hashlib.sha256()
    opener = gzip.open if gzipped else open
    try:
        with opener(path, "rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    except (OSError, EOFError, gzip.BadGzipFile) as error:
        raise DataFileError(f"{path} cannot be read ({error}); delete it and fetch the file again") from None
    return digest.hexdigest()


def _verify(path: Path, data_file: DataFile) -> None:
    actual = content_sha256(path, gzipped=data_file.filename.endswith(".gz"))
    if actual != data_file.sha256:
        raise DataFileError(
            f"{path} is corrupt or not the original file (content sha256 {actual[:12]}…, expected "
            f"{data_file.sha256[:12]}…); replace it with {data_file.filename} from {data_file.source}"
        )


def _download(data_file: DataFile, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{data_file.filename}.", suffix=".part")
    temporary_path = Path(temporary)
    try:
        with (
            os.fdopen(handle, "wb") as out,
            urllib.request.urlopen(data_file.url, timeout=DOWNLOAD_TIMEOUT_S) as response,
        ):
            while chunk := response.read(_CHUNK):
                out.write(chunk)
        _verify(temporary_path, data_file)
        temporary_path.replace(target)
    except (urllib.error.URLError, OSError) as error:
        raise DataFileError(
            f"could not download {data_file.filename} from {data_file.url} ({error}); put the file at {target} by hand"
        ) from None
    finally:
        temporary_path.unlink(missing_ok=True)


def fetch(data_file: DataFile, data_dir: Path | str | None) -> Path:
    """Path to a verified local copy of ``data_file``, downloading it when missing and allowed.

    A file without a pinned checksum (its original was not at hand when the loader was written)
    is used unverified, with a warning, and never downloaded."""
    refuse_inside_fit(f"reading the dataset file {data_file.filename}")
    target = data_folder(data_dir) / data_file.folder / data_file.filename
    if target.exists() and not target.is_file():  # reading a FIFO blocks; a device may never end
        linked = f" (a link to {target.resolve()})" if target.is_symlink() else ""
        raise DataFileError(
            f"{target}{linked} is not a regular file (a folder, FIFO, device or socket); "
            f"replace it with {data_file.filename} from {data_file.source}"
        )
    if target.exists():
        if data_file.sha256 is None:
            warnings.warn(
                f"{target}: no content checksum is pinned for {data_file.filename} ({data_file.source}), "
                "so the file is used unverified",
                stacklevel=2,
            )
        else:
            _verify(target, data_file)
        return target
    where = f"put it at {target} (or point --data-dir / ${DATA_DIR_VARIABLE} at a folder holding {data_file.folder}/)"
    if data_file.url is None or data_file.sha256 is None:
        raise DataFileError(f"{data_file.filename} is missing: {data_file.manual or data_file.source}; {where}")
    if offline():
        raise DataFileError(
            f"{data_file.filename} is missing and {OFFLINE_VARIABLE} is set: get it from {data_file.url}; {where}"
        )
    _download(data_file, target)
    return target


def open_text(path: Path) -> TextIO:
    """A text reader of the file, gunzipping ``.gz`` transparently."""
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")
