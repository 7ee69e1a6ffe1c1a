"""The data walls around a fit: inside ``fit`` the private rows are reached through the
``PrivateData`` handle and no other door (issue 56; docs/privacy.md, "The walls").

Two walls, both raised by the worker around ``method.fit`` (``bench/harness/worker.py``):

* **The loaders refuse** (:func:`fit_wall`, :func:`refuse_inside_fit`): while a fit runs in this
  process, every dataset file read (``datasets.files.fetch``) and every dataset's ``load`` (the
  generated 2-D mixture's, a declared plugin's) raises :class:`DataWallError`. Lifted when the fit
  returns, so the evaluators — which must read the test split — run outside it. In any process.
* **The process loses the data folder** (:func:`lock_data_folder`): in a worker process that runs
  one cell (``bench run``'s local executor), Linux Landlock removes the process's read access to
  the data folder before ``fit`` starts — an ``open`` there fails whatever code asks, the method's
  own or a library's. Public files inside the folder stay readable (``fid-inception/``: FID's and
  DP-MEPF's Inception weights). Irreversible for the process, so never in a process that runs
  more than the cell: not in ``bench.run_cell`` (the caller's own process) nor in a Ray worker
  (reused across tasks). Where the kernel has no Landlock (before Linux 5.13, or disabled), the
  first wall alone stands and the run's tag ``wall.data_folder`` says so.

The split is loaded before either wall (the worker loads train and test, then fits); what a fit
receives of it is the handle.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from bench.core.errors import UsageError
from bench.core.inception import MIRROR_FOLDER

PUBLIC_SUBFOLDERS = (MIRROR_FOLDER,)  # public files inside the data folder (pretrained weights)

_fits: list[str] = []  # the method whose fit runs in this process (a stack: fits do not nest, tests may)


def wall_message(method: str, path: str) -> str:
    return (
        f"reading {path} inside {method}'s fit: the data wall (Landlock) refused it — a fit reaches its rows "
        "only through the PrivateData handle it is given (docs/privacy.md, 'The walls')"
    )


class DataWallError(UsageError, PermissionError):
    """A fit tried to reach the data by a door other than its ``PrivateData`` handle."""


@contextmanager
def fit_wall(method: str) -> Iterator[None]:
    """While the body runs, dataset loads and dataset file reads in this process are refused."""
    _fits.append(method)
    try:
        yield
    finally:
        _fits.pop()


def inside_fit() -> str | None:
    """The method whose fit runs in this process now, if any."""
    return _fits[-1] if _fits else None


def refuse_inside_fit(what: str) -> None:
    """Raises :class:`DataWallError` when called while a fit runs in this process."""
    if _fits:
        raise DataWallError(
            f"{what} inside {_fits[-1]}'s fit: the data wall refuses it — a fit reaches its rows only through "
            "the PrivateData handle it is given (docs/privacy.md, 'The walls')"
        )


# --- Landlock (Linux ≥ 5.13), through its three system calls -------------------------------------

_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}  # create_ruleset, add_rule, restrict_self
_READ_FILE, _READ_DIR = 1 << 2, 1 << 3  # LANDLOCK_ACCESS_FS_READ_FILE, LANDLOCK_ACCESS_FS_READ_DIR
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 where there is none (not Linux, too old, disabled)."""
    calls = _SYSCALLS.get(os.uname().machine) if sys.platform.startswith("linux") else None
    if calls is None:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    version = libc.syscall(calls[0], None, ctypes.c_size_t(0), ctypes.c_uint32(1))  # LANDLOCK_CREATE_RULESET_VERSION
    return max(0, int(version))


def readable_beside(folder: Path, public: Sequence[Path] = ()) -> list[tuple[Path, int]]:
    """The (path, access) rules that keep everything readable but ``folder``'s hierarchy: every
    sibling of ``folder`` and of each of its ancestors (files: read; folders: read and list), the
    ancestors themselves listable, and the ``public`` paths inside ``folder``."""
    folder = folder.resolve()
    rules: list[tuple[Path, int]] = []
    for parent, child in zip(folder.parents, [folder, *folder.parents][:-1]):
        rules.append((parent, _READ_DIR))
        try:
            entries = list(parent.iterdir())
        except OSError:
            continue
        for entry in entries:
            if entry.name == child.name:
                continue
            if entry.is_symlink():  # a rule is on what a link points to: never on the folder or above it
                entry = entry.resolve()
                if folder.is_relative_to(entry) or entry.is_relative_to(folder):
                    continue
            rules.append((entry, _READ_FILE if entry.is_file() else _READ_FILE | _READ_DIR))
    rules += [(path.resolve(), _READ_FILE | _READ_DIR) for path in public if path.exists()]
    return rules


def lock_data_folder(folder: Path, public: Sequence[Path] | None = None) -> bool:
    """Remove this process's read access to ``folder`` (its public subfolders excepted), for good.
    True when Landlock took it; False where the kernel has none (nothing changed)."""
    calls = _SYSCALLS.get(os.uname().machine)
    if landlock_abi() < 1 or calls is None:
        return False
    create, add_rule, restrict = calls
    libc = ctypes.CDLL(None, use_errno=True)
    attr = _RulesetAttr(_READ_FILE | _READ_DIR)
    ruleset = libc.syscall(create, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if ruleset < 0:
        return False
    try:
        publics = [folder / name for name in PUBLIC_SUBFOLDERS] if public is None else list(public)
        for path, access in readable_beside(folder, publics):
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # gone, or unreadable anyway
            try:
                if access & _READ_DIR and not os.path.isdir(path):
                    access = _READ_FILE
                beneath = _PathBeneathAttr(access, fd)
                libc.syscall(
                    add_rule,
                    ctypes.c_int(ruleset),
                    ctypes.c_int(_RULE_PATH_BENEATH),
                    ctypes.byref(beneath),
                    ctypes.c_uint32(0),
                )
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return libc.syscall(restrict, ctypes.c_int(ruleset), ctypes.c_uint32(0)) == 0
    finally:
        os.close(ruleset)
