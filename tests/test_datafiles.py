"""Checksum verification, the offline error, and downloads from a local HTTP server."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import threading

import pytest

from datasets.files import DataFile, DataFileError, fetch, open_text

CONTENT = b"39, State-gov, 77516, Bachelors, 13, Never-married, <=50K\n"


def data_file(url=None, manual=None):
    return DataFile("toy", "toy.data.gz", hashlib.sha256(CONTENT).hexdigest(), url, "the toy archive", manual)


@pytest.fixture
def server(tmp_path):
    """A local HTTP server on 127.0.0.1 serving tmp_path/served."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_a_verified_local_copy_is_used(tmp_path, monkeypatch):
    monkeypatch.setenv("DPBENCH_OFFLINE", "1")
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "toy.data.gz").write_bytes(gzip.compress(CONTENT, mtime=0))
    path = fetch(data_file(), tmp_path)
    with open_text(path) as handle:
        assert handle.read().encode() == CONTENT


def test_the_content_hash_ignores_recompression(tmp_path):
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "toy.data.gz").write_bytes(gzip.compress(CONTENT, compresslevel=1, mtime=12345))
    assert fetch(data_file(), tmp_path).exists()


def test_a_corrupted_copy_is_refused_with_a_clear_error(tmp_path):
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "toy.data.gz").write_bytes(gzip.compress(CONTENT.replace(b"39", b"93")))
    with pytest.raises(DataFileError, match="corrupt or not the original file.*replace it with toy.data.gz"):
        fetch(data_file(), tmp_path)


@pytest.mark.parametrize("kind", ["fifo", "link-to-an-endless-device", "folder", "link-to-a-fifo"])
def test_a_data_file_that_is_not_a_regular_file_is_refused_before_it_is_read(tmp_path, kind):
    """Issue 61: a FIFO blocked the loader forever, and a link to /dev/zero hashed forever; a
    pinned and an unpinned file alike are refused in one line before any read."""
    import os

    (tmp_path / "toy").mkdir()
    target = tmp_path / "toy" / "toy.data.gz"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "link-to-an-endless-device":
        target.symlink_to("/dev/zero")
    elif kind == "folder":
        target.mkdir()
    else:
        os.mkfifo(tmp_path / "pipe")
        target.symlink_to(tmp_path / "pipe")
    for pinned in (data_file(), DataFile("toy", "toy.data.gz", None, None, "the toy archive")):
        with pytest.raises(DataFileError, match="is not a regular file") as refused:
            fetch(pinned, tmp_path)
        assert "\n" not in str(refused.value)


def test_a_truncated_gzip_is_refused(tmp_path):
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "toy.data.gz").write_bytes(gzip.compress(CONTENT)[:20])
    with pytest.raises(DataFileError, match="cannot be read"):
        fetch(data_file(), tmp_path)


def test_a_missing_file_offline_names_the_file_its_source_and_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.setenv("DPBENCH_OFFLINE", "1")
    with pytest.raises(DataFileError) as error:
        fetch(data_file(url="http://127.0.0.1:9/toy.data.gz"), tmp_path)
    message = str(error.value)
    assert "toy.data.gz is missing" in message and "http://127.0.0.1:9/toy.data.gz" in message
    assert str(tmp_path / "toy" / "toy.data.gz") in message and "\n" not in message


def test_a_manual_only_file_explains_the_manual_download(tmp_path):
    with pytest.raises(DataFileError, match="log in to Kaggle"):
        fetch(data_file(manual="log in to Kaggle and download creditcard.csv"), tmp_path)


def test_download_from_the_canonical_url_is_verified_and_cached(tmp_path, server, monkeypatch):
    monkeypatch.delenv("DPBENCH_OFFLINE", raising=False)
    served, url = server
    (served / "toy.data.gz").write_bytes(gzip.compress(CONTENT))
    cache = tmp_path / "cache"
    path = fetch(data_file(url=f"{url}/toy.data.gz"), cache)
    assert path == cache / "toy" / "toy.data.gz" and path.exists()
    assert [p.name for p in (cache / "toy").iterdir()] == ["toy.data.gz"]  # no partial files left
    (served / "toy.data.gz").unlink()
    assert fetch(data_file(url=f"{url}/toy.data.gz"), cache) == path  # cached: no second download


def test_a_download_with_the_wrong_content_leaves_nothing_behind(tmp_path, server, monkeypatch):
    monkeypatch.delenv("DPBENCH_OFFLINE", raising=False)
    served, url = server
    (served / "toy.data.gz").write_bytes(gzip.compress(b"something else"))
    with pytest.raises(DataFileError, match="corrupt"):
        fetch(data_file(url=f"{url}/toy.data.gz"), tmp_path / "cache")
    assert not any((tmp_path / "cache" / "toy").iterdir())


def test_an_unreachable_server_gives_a_one_line_error(tmp_path, server, monkeypatch):
    monkeypatch.delenv("DPBENCH_OFFLINE", raising=False)
    _, url = server
    with pytest.raises(DataFileError, match="could not download toy.data.gz"):
        fetch(data_file(url=f"{url}/missing.gz"), tmp_path)
