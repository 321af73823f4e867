"""Writing output: whole files only, and never over anything but a regular file.

The rules every command's output follows (README, "Where output goes"):

- A file is written whole: to a temporary file beside it, then moved onto
  its name (``rename(2)`` is atomic within a directory), so that a reader
  sees the old file or the new one, never half of one.
- Only a regular file is ever replaced. A path that exists and is anything
  else (a directory where a file is meant, a device such as ``/dev/null``, a
  FIFO, a socket) is refused: a rename would put a regular file in its place,
  which for a device node breaks the system.
- A symbolic link is written through: the file written is the link's target
  (all links resolved, as ``realpath`` does), which must itself be a regular
  file or not exist yet; the link stays a link.
- An output is never one of the command's inputs, nor one of the files a
  results directory is read from (``manifest.json``, ``journal.jsonl``,
  ``results.parquet`` and the rest of :data:`RESULTS_DIR_FILES`): only the
  command writing that directory replaces those.
- Missing directories are not created on the way: a file's directory must
  exist. A command whose output is a directory creates that one directory
  (its parent must exist); only a command's default output directory (such
  as ``results/NAME``) may create the default's parents.
- Every output path is checked with :func:`check_output_file`,
  :func:`check_output_dir` or :func:`check_name` before the command does any
  work, so that a bad one is found out in a second, not after an hour's
  simulation or a search that changed a real device.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Union

PathLike = Union[str, "os.PathLike[str]"]

#: The longest file name Linux takes (NAME_MAX, in bytes).
NAME_MAX = 255


class OutputPathError(ValueError):
    """An output path or name that cannot be used; the message is one sentence."""


class NotARegularFile(OSError):
    """A write aimed at something that is not a regular file (found only at
    write time when the path was not checked before, or changed since)."""


def what_is(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, as a noun phrase."""
    for test, text in (
        (stat.S_ISREG, "a regular file"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if test(mode):
            return text
    return "not a regular file"


def write_target(path: PathLike) -> Path:
    """The file a write to ``path`` lands on: ``path`` with every symbolic
    link resolved (the file itself need not exist)."""
    return Path(os.path.realpath(path))


def _label(flag: str, text: str) -> str:
    return f"{flag} {text}" if flag else text


def _via(text: str, target: Path) -> str:
    """" (a symbolic link to T)" when ``text`` is a symbolic link."""
    return f" (a symbolic link to {target})" if os.path.islink(text) else ""


def _stat(path: Path) -> Optional[os.stat_result]:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def check_output_file(
    text: PathLike, flag: str, error: type[Exception] = OutputPathError, *, inputs: Iterable[tuple[str, PathLike]] = ()
) -> Path:
    """Check that ``text`` can take an output file, before any work: it names
    a regular file (which will be replaced) or nothing yet, possibly through
    symbolic links, in a directory that exists and can be written; and it is
    neither one of the command's ``inputs`` (``(flag, path)`` pairs, the
    flag empty for a positional argument: the files it reads, or its other
    outputs) nor one of the files a results
    directory is read from (:data:`RESULTS_DIR_FILES`). Raises ``error`` with
    one sentence naming ``flag`` (``--out``; empty for a default path) and
    what is accepted. Returns ``Path(text)``."""
    text = os.fspath(text)
    label = _label(flag, text)
    if not text.strip() or text.endswith("/"):
        raise error(f"{flag or 'the output'} must name a file (got {text!r})")
    target = write_target(text)
    try:
        st = _stat(target)
    except OSError as e:
        raise error(f"{label} cannot be reached ({e.strerror or e}); give the path of a regular file") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise error(
            f"{label}{_via(text, target)} is {what_is(st.st_mode)}; give the path of a regular file "
            "(an existing one is replaced) or of a new file"
        )
    _check_parent(target, label, error, "file")
    _check_not_read(text, target, st, label, inputs, error)
    return Path(text)


def _check_not_read(
    text: str, target: Path, st: Optional[os.stat_result], label: str, inputs: Iterable[tuple[str, PathLike]],
    error: type[Exception],
) -> None:
    """Refuse an output that is one of the command's ``inputs`` or one of
    the files a results directory is read from (issue 62, item 9: ``irqlab
    report DIR --out DIR/results.parquet`` replaced the results it read)."""
    for flag, given in inputs:
        if _same_file(target, st, write_target(given)):
            raise error(f"{label}{_via(text, target)} is the file {_label(flag, os.fspath(given))} names, which this command "
                        "also uses; give each its own path")
    directory = results_directory_of(target)
    if directory is not None:
        raise error(
            f"{label}{_via(text, target)} is the {target.name} of the results directory {directory}, which would then "
            "read as damaged; give a path that is not one of a results directory's own files "
            f"({', '.join(sorted(RESULTS_DIR_FILES))})"
        )


def _same_file(target: Path, st: Optional[os.stat_result], other: Path) -> bool:
    """Whether a write to ``target`` lands on ``other`` (same resolved path,
    or the same inode through a hard link)."""
    if target == other:
        return True
    theirs = _stat_quiet(other)
    return st is not None and theirs is not None and (st.st_dev, st.st_ino) == (theirs.st_dev, theirs.st_ino)


def check_output_dir(
    text: PathLike, flag: str, error: type[Exception] = OutputPathError, *, parents: bool = False
) -> Path:
    """Check that ``text`` can be an output directory, before any work: an
    existing directory (symbolic links followed) that can be written, or a
    new one whose parent exists (with ``parents``, for a command's default,
    the nearest existing ancestor). Nothing is created. Raises ``error``
    with one sentence naming ``flag``. Returns ``Path(text)``."""
    text = os.fspath(text)
    label = _label(flag, text)
    if not text.strip():
        raise error(f"{flag or 'the output directory'} must name a directory (got {text!r})")
    target = write_target(text)
    try:
        st = _stat(target)
    except OSError as e:
        raise error(f"{label} cannot be reached ({e.strerror or e}); give a directory") from None
    if st is not None:
        if not stat.S_ISDIR(st.st_mode):
            raise error(
                f"{label}{_via(text, target)} exists and is not a directory (it is {what_is(st.st_mode)}); "
                "give a directory, new or existing"
            )
        if not os.access(target, os.W_OK | os.X_OK):
            raise error(f"{label} is a directory this user cannot write into; give another directory")
        return Path(text)
    if parents:
        ancestor = target.parent
        while _stat_quiet(ancestor) is None and ancestor != ancestor.parent:
            ancestor = ancestor.parent
        _check_parent(ancestor / target.name, label, error, "directory")
    else:
        _check_parent(target, label, error, "directory")
    return Path(text)


def _stat_quiet(path: Path) -> Optional[os.stat_result]:
    try:
        return os.stat(path)
    except OSError:
        return None


def _check_parent(target: Path, label: str, error: type[Exception], kind: str) -> None:
    parent = target.parent
    st = _stat_quiet(parent)
    if st is None:
        raise error(f"{label}: its directory {parent} does not exist; create it first (irqlab creates no parent directories)")
    if not stat.S_ISDIR(st.st_mode):
        raise error(f"{label}: {parent} is {what_is(st.st_mode)}, not a directory")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise error(f"{label}: this user cannot create a {kind} in {parent}")


def make_output_dir(text: PathLike, flag: str, error: type[Exception] = OutputPathError, *, parents: bool = False) -> Path:
    """:func:`check_output_dir`, then create the directory if it is missing
    (with ``parents``, its missing parents too). Returns ``Path(text)``."""
    path = check_output_dir(text, flag, error, parents=parents)
    target = write_target(path)
    try:
        target.mkdir(parents=parents, exist_ok=True)
    except OSError as e:
        raise error(f"{_label(flag, os.fspath(text))} cannot be created: {e.strerror or e}") from None
    return path


def check_name(text: Optional[str], flag: str, error: type[Exception] = OutputPathError) -> Optional[str]:
    """``text`` if it can be one file or directory name (one path component:
    not empty, not ``.`` or ``..``, no ``/``, no control character, at most
    255 bytes), else ``error`` naming ``flag``; None stays None."""
    if text is None:
        return None
    bad = (
        not text
        or text in (".", "..")
        or "/" in text
        or any(ord(c) < 32 or ord(c) == 127 for c in text)
        or len(text.encode("utf-8", "surrogateescape")) > NAME_MAX
    )
    if bad:
        raise error(
            f"{flag} must be one file name: not empty, not . or .., without / or control characters, "
            f"at most {NAME_MAX} bytes (got {text!r})"
        )
    return text


def write_whole(path: PathLike, write: Callable[[Path], Any]) -> None:
    """Call ``write(tmp)`` for a new file beside ``path``'s target (symbolic
    links resolved), then move it onto the target (``rename(2)`` is atomic
    within a directory). The file gets the usual permissions (``0666`` less
    the umask), as a file written in place would: results, figures and
    reports are for sharing. Raises :class:`NotARegularFile` (an ``OSError``
    naming ``path``) and writes nothing if the target exists and is not a
    regular file; ``FileNotFoundError`` if its directory does not exist."""
    target = write_target(path)
    st = _stat_quiet(target)
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise NotARegularFile(
            errno.EEXIST, f"is {what_is(st.st_mode)}, not a regular file, and irqlab replaces only regular files",
            os.fspath(path),
        )
    for _ in range(100):
        tmp = target.with_name(f".{target.name[:200]}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 collisions of 32 random bits
        raise FileExistsError(f"cannot create a temporary file beside {path}")
    try:
        write(tmp)
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_text_whole(path: PathLike, text: str) -> None:
    """:func:`write_whole` of UTF-8 text."""
    write_whole(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


# -- what an output directory holds ------------------------------------------

#: The file that marks each kind of results directory a command writes
#: besides ``manifest.json`` (a sweep has only that); written first, so that
#: an interrupted write is still recognised.
KIND_FILES = {"linux tune": "tune.json", "testbed tune": "testbed-tune.json", "testbed run": "testbed.json"}
#: The file every reproduction writes first into its ``--out`` (irqlab.reproduce).
REPRODUCTION_MARKER = "reproduction.json"


#: The files a results directory (``irqlab sweep``'s, or the one ``linux
#: tune``, ``testbed run`` or ``testbed tune`` write with ``--out``) is read
#: from: irqlab.study.layout's names and the kind files above. Only the
#: command writing the directory replaces them (irqlab.study.store,
#: irqlab.results.write_directory); no command's output path may name one,
#: or the directory it reads would be replaced under it (issue 62, item 9).
RESULTS_DIR_FILES = frozenset(
    {"manifest.json", "journal.jsonl", "results.parquet", "scenario.toml", "study.toml", *KIND_FILES.values()}
)


def results_directory_of(path: PathLike) -> Optional[Path]:
    """The results directory ``path`` (links resolved) is one of the own
    files of (:data:`RESULTS_DIR_FILES`), or None: its name is one of those
    and its directory holds a ``manifest.json`` or a kind file."""
    target = write_target(path)
    if target.name not in RESULTS_DIR_FILES:
        return None
    marks = ("manifest.json", *KIND_FILES.values())
    return target.parent if any((target.parent / m).is_file() for m in marks) else None


def output_kind(directory: PathLike) -> Optional[str]:
    """What ``directory`` holds: None if it is missing or empty; the command
    that wrote it (``"sweep"``, ``"linux tune"``, ``"testbed run"``,
    ``"testbed tune"``, ``"reproduce"``); or ``"other"``."""
    path = Path(directory)
    try:
        entries = os.listdir(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return "other"
    if not entries:
        return None
    if REPRODUCTION_MARKER in entries:
        return "reproduce"
    for kind, name in KIND_FILES.items():
        if name in entries:
            return kind
    if "manifest.json" in entries:
        return "sweep"
    return "other"


def describe_kind(kind: Optional[str]) -> str:
    """``output_kind``'s answer as words ("a sweep's results")."""
    return {
        None: "nothing",
        "sweep": "a sweep's results",
        "reproduce": "a reproduction's output",
        "other": "files that irqlab did not write there",
    }.get(kind, f"the output of irqlab {kind}")


def check_results_out(text: PathLike, flag: str, kind: str, error: type[Exception] = OutputPathError) -> Path:
    """:func:`check_output_dir` for a command that writes a whole results
    directory (``kind``: ``"linux tune"``, ``"testbed run"``, ``"testbed
    tune"``): it must also be new, empty, or an earlier output of the same
    command (whose files are replaced); anything else is refused."""
    path = check_output_dir(text, flag, error)
    theirs = output_kind(write_target(path))
    if theirs is not None and theirs != kind:
        raise error(
            f"{_label(flag, os.fspath(text))} holds {describe_kind(theirs)}; give a new or empty directory, "
            f"or one that irqlab {kind} wrote"
        )
    return path
