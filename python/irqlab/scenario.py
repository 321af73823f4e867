"""Scenarios: a TOML text, a profile and ``key=value`` overrides.

A :class:`Scenario` is immutable: :meth:`Scenario.with_profile` and
:meth:`Scenario.with_overrides` return new objects. Every object is validated
by the core when it is made (``_core.resolve``), so a bad file, an unknown
profile or an out-of-range override raises :class:`irqlab.ScenarioError` at
once, never later in a run. The layering is the core's: the file, then the
profile, then the overrides in the order given (a later one wins).

An argument of the wrong type raises :class:`TypeError` naming the parameter
and the types it takes; every :class:`ScenarioError` raised here is one line
(the core's multi-line messages, such as the TOML parser's, are joined).
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn, Optional, Union

from irqlab import _core
from irqlab._core import ScenarioError

#: What :meth:`Scenario.with_overrides` accepts as a positional argument.
Overrides = Union[str, Mapping[str, Any], Iterable[str]]

#: The largest scenario file :meth:`Scenario.load` reads, bytes (4 MiB). A
#: real scenario is a few kilobytes; the cap keeps `irqlab run /dev/zero`-like
#: mistakes from reading until memory runs out. The core's limit, so that
#: both readers of a scenario file agree.
MAX_SCENARIO_BYTES: int = _core.MAX_SCENARIO_BYTES

_OVERRIDES_TYPES = "a 'key=value' str, a mapping of keys to values or an iterable of 'key=value' strs"


class Scenario:
    """A validated scenario: the file's text plus a profile and overrides."""

    __slots__ = ("_text", "_profile", "_overrides", "_source", "_resolved_json")

    def __init__(
        self,
        text: str,
        *,
        profile: Optional[str] = None,
        overrides: Overrides = (),
        source: Optional[str] = None,
    ) -> None:
        _check_text(text, "text", "a str (the scenario's TOML text)")
        _check_profile(profile)
        if source is not None and not isinstance(source, str):
            raise TypeError(f"source must be a str (the file the scenario came from) or None, not {_type(source)}")
        pairs = tuple(override_pairs(overrides))
        self._text = text
        self._profile = profile
        self._overrides = pairs
        self._source = source
        # Validation happens here, in the core, so that no invalid object exists.
        try:
            self._resolved_json = _core.resolve(text, profile, list(pairs))
        except ScenarioError as e:
            raise _blame_override(text, profile, pairs, e) from None

    # -- construction -------------------------------------------------------

    @classmethod
    def load(cls, path: Union[str, os.PathLike[str]]) -> Scenario:
        """Read and validate a scenario file.

        Only a regular file of at most :data:`MAX_SCENARIO_BYTES` is read; a
        directory, device or FIFO is refused without reading from it.
        """
        path = fspath(path, "path")
        text = read_scenario_file(path)
        try:
            return cls(text, source=path)
        except ScenarioError as e:
            raise ScenarioError(one_line(f"{path}: {e}")) from None

    @classmethod
    def from_str(cls, text: str, *, source: Optional[str] = None) -> Scenario:
        """Validate a scenario given as TOML text."""
        return cls(text, source=source)

    def with_profile(self, name: Optional[str]) -> Scenario:
        """The same scenario under profile ``name`` (``None``: the file's own, if any)."""
        _check_profile(name)
        return Scenario(self._text, profile=name, overrides=self._overrides, source=self._source)

    def with_overrides(self, *args: Overrides, **kwargs: Any) -> Scenario:
        """The same scenario with more overrides, applied after the existing ones.

        Each positional argument is a ``"key=value"`` string (the value is read
        as TOML, a bare word as a string, exactly like ``--set``), an iterable
        of such strings, or a mapping ``{"load.qps": 300000}``. A mapping under
        a section name sets fields of that section (``{"load": {"qps":
        300000}}``); under a field it is an inline table that replaces the
        field (``{"app.service": {"dist": "fixed", "cycles": 4000}}``). Keyword
        arguments are a mapping whose ``__`` stands for ``.``:
        ``with_overrides(load__qps=300000)``. Python values are written as
        TOML (bool, int, float, list, dict); a top-level ``str`` value is read
        like ``--set`` (TOML, or a string if it is a bare word).
        """
        pairs: list[str] = []
        for arg in args:
            pairs.extend(override_pairs(arg))
        if kwargs:
            pairs.extend(_pairs_from_mapping({k.replace("__", "."): v for k, v in kwargs.items()}))
        return Scenario(
            self._text, profile=self._profile, overrides=self._overrides + tuple(pairs), source=self._source
        )

    # -- reading ------------------------------------------------------------

    def resolved(self) -> dict[str, Any]:
        """The resolved configuration (file + profile + overrides) as a fresh dict."""
        resolved: dict[str, Any] = json.loads(self._resolved_json)
        return resolved

    @property
    def text(self) -> str:
        """The scenario file's TOML text, as given."""
        return self._text

    @property
    def profile(self) -> Optional[str]:
        """The profile chosen here; ``None`` means the file's ``run.profile``, if any."""
        return self._profile

    @property
    def overrides(self) -> tuple[str, ...]:
        """The overrides, as ``"key=value"`` strings in the order applied."""
        return self._overrides

    @property
    def source(self) -> Optional[str]:
        """The file the scenario was loaded from, if any."""
        return self._source

    @property
    def name(self) -> str:
        """The scenario's ``name`` field."""
        return str(self.resolved().get("name", ""))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Scenario):
            return NotImplemented
        return (self._text, self._profile, self._overrides) == (other._text, other._profile, other._overrides)

    def __hash__(self) -> int:
        return hash((self._text, self._profile, self._overrides))

    def __repr__(self) -> str:
        where = self._source if self._source is not None else f"name={self.name!r}"
        parts = [where]
        if self._profile is not None:
            parts.append(f"profile={self._profile!r}")
        if self._overrides:
            parts.append(f"overrides={list(self._overrides)!r}")
        return f"Scenario({', '.join(parts)})"


def override_pairs(overrides: Overrides) -> list[str]:
    """``overrides`` (one ``"key=value"`` str, a mapping, or an iterable of
    ``"key=value"`` strs; ``None`` for none) as a list of ``"key=value"`` strs.

    A str is one override, never its characters; a wrong type raises
    :class:`TypeError` naming ``overrides`` and the accepted types.
    """
    if overrides is None:
        return []
    if isinstance(overrides, str):
        _check_unicode(overrides, f"override {overrides!r}")
        return [overrides]
    if isinstance(overrides, Mapping):
        pairs = _pairs_from_mapping(overrides)
        for pair in pairs:
            _check_unicode(pair, f"override {pair!r}")
        return pairs
    if isinstance(overrides, (bytes, bytearray, memoryview)) or not isinstance(overrides, Iterable):
        raise TypeError(f"overrides must be {_OVERRIDES_TYPES}, not {_type(overrides)}")
    pairs = []
    for pair in overrides:
        if not isinstance(pair, str):
            raise TypeError(f"each override in an iterable must be a 'key=value' str, not {_type(pair)}")
        pairs.append(pair)
    for pair in pairs:
        _check_unicode(pair, f"override {pair!r}")
    return pairs


def fspath(path: object, what: str) -> str:
    """``path`` (a str or an ``os.PathLike`` giving a str) as a str; a
    :class:`TypeError` naming parameter ``what`` otherwise."""
    accepted = "a str or an os.PathLike such as pathlib.Path"
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{what} must be {accepted}, not {_type(path)}")
    text = os.fspath(path)
    if not isinstance(text, str):
        raise TypeError(f"{what} must be {accepted} giving a str, not one giving {_type(text)}")
    return text


def read_scenario_file(path: str) -> str:
    """The text of scenario file ``path``: a regular file of at most
    :data:`MAX_SCENARIO_BYTES` bytes of UTF-8.

    The file is stat'ed before it is opened, so a device is never opened
    (opening some has effects of their own) and a FIFO never blocks; it is
    opened with ``O_NONBLOCK`` and checked again through the descriptor in
    case it was replaced in between, and at most one byte more than the cap
    is read.
    """

    def refuse(reason: str) -> NoReturn:
        raise ScenarioError(one_line(f"cannot read scenario file {path}: {reason}")) from None

    try:
        st = os.stat(path)
    except OSError as e:
        refuse(e.strerror or str(e))
    except ValueError as e:  # an embedded NUL character
        refuse(str(e))
    _check_regular(st, refuse)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        refuse(e.strerror or str(e))
    try:
        with os.fdopen(fd, "rb") as f:
            _check_regular(os.fstat(f.fileno()), refuse)
            data = f.read(MAX_SCENARIO_BYTES + 1)
    except OSError as e:
        refuse(e.strerror or str(e))
    if len(data) > MAX_SCENARIO_BYTES:
        refuse(_too_large())
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(f"scenario file {path} is not UTF-8 text (byte {e.start} is not valid UTF-8)") from None
    # An empty file (or one of comments) would run every default: more likely
    # a truncated or wrong file than a choice (issue 62, item 12). A TOML
    # document whose every line is blank or a comment sets nothing.
    if all(not line.strip() or line.strip().startswith("#") for line in text.lstrip("\ufeff").splitlines()):
        refuse(EMPTY_FILE)
    return text


#: Why an empty scenario file is refused; the core's words for it
#: (``crates/irqlab-core/src/scenario/mod.rs``, ``EMPTY_FILE``).
EMPTY_FILE = ("it sets no field (it is empty or holds only comments); give at least one table, e.g. [load], "
              "or start from a file in scenarios/")


def _check_regular(st: os.stat_result, refuse: Any) -> None:
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        refuse("it is a directory, not a scenario file")
    if not stat.S_ISREG(mode):
        kind = (
            "a character device" if stat.S_ISCHR(mode)
            else "a block device" if stat.S_ISBLK(mode)
            else "a FIFO" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode)
            else "not a regular file"
        )
        refuse(f"it is {kind}; a scenario must be a regular file")
    if st.st_size > MAX_SCENARIO_BYTES:
        refuse(_too_large(st.st_size))


def _too_large(size: Optional[int] = None) -> str:
    what = f"{size} bytes" if size is not None else "larger than that"
    return f"a scenario file may have at most {MAX_SCENARIO_BYTES} bytes (4 MiB) and this one is {what}"


def one_line(message: str) -> str:
    """``message`` with every run of whitespace (newlines included) made one space."""
    return " ".join(message.split())


def _quote(key: str) -> str:
    """A key for a message: in backticks, or as a Python literal if it holds
    characters that do not print (a newline would split the message)."""
    return f"`{key}`" if key.isprintable() else repr(key)


def _type(value: object) -> str:
    return type(value).__name__


def _check_text(value: object, what: str, accepted: str) -> None:
    """A :class:`TypeError` unless ``value`` is a str; a :class:`ScenarioError`
    if it cannot be encoded as UTF-8 (it holds a lone surrogate)."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be {accepted}, not {_type(value)}")
    _check_unicode(value, what)


def _check_unicode(value: str, what: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ScenarioError(
            f"{what} is not valid Unicode: it holds a lone surrogate (U+{ord(value[e.start]):04X}) "
            f"at position {e.start}"
        ) from None


def _check_profile(profile: object) -> None:
    if profile is None:
        return
    _check_text(profile, "profile", f"a str (one of {', '.join(_core.profiles())}) or None")


def _blame_override(
    text: str, profile: Optional[str], overrides: tuple[str, ...], error: ScenarioError
) -> ScenarioError:
    """Name the override at fault when the core's message does not.

    The core applies overrides one by one, so the first prefix of them that
    fails ends with the culprit. File and profile errors are returned as is.
    Either way the message is made one line.
    """
    for i, pair in enumerate(overrides):
        try:
            _core.resolve(text, profile, list(overrides[: i + 1]))
        except ScenarioError as e:
            message = one_line(str(e))
            key = pair.split("=", 1)[0].strip()
            if key and f"`{key}`" in message:
                return ScenarioError(message)
            return ScenarioError(one_line(f"override `{pair}` was rejected: {message}"))
    return ScenarioError(one_line(str(error)))


def _pairs_from_mapping(mapping: Mapping[str, Any], prefix: str = "") -> list[str]:
    pairs = []
    for key, value in mapping.items():
        if not isinstance(key, str):
            raise TypeError(f"override keys must be str, not {type(key).__name__}")
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and "." not in path:
            # A mapping under a section name sets fields of that section; one
            # deeper (`app.service`) is an inline table that replaces the value.
            pairs.extend(_pairs_from_mapping(value, prefix=f"{path}."))
        else:
            pairs.append(f"{path}={_toml_value(value, key=path, top=True)}")
    return pairs


def _toml_value(value: Any, *, key: str, top: bool) -> str:
    """A Python value as TOML text. A top-level ``str`` is passed as written
    (read like ``--set``); inside a list it is quoted."""
    if hasattr(value, "item") and callable(value.item) and not isinstance(value, (str, bytes)):
        value = value.item()  # numpy scalar -> Python scalar
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return value if top else _toml_string(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v, key=key, top=False) for v in value) + "]"
    if isinstance(value, Mapping):
        items = (f"{_toml_key(k)} = {_toml_value(v, key=f'{key}.{k}', top=False)}" for k, v in value.items())
        return "{ " + ", ".join(items) + " }"
    if value is None:
        raise TypeError(
            f"override {_quote(key)} is None; TOML has no null, so leave the key out of the scenario instead"
        )
    raise TypeError(f"override {_quote(key)} has a value of type {type(value).__name__}, which TOML cannot express")


def _toml_key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"override keys must be str, not {type(key).__name__}")
    bare = key and all(c.isascii() and (c.isalnum() or c in "-_") for c in key)
    return key if bare else _toml_string(key)


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string. Not ``json.dumps``: JSON writes an
    astral character as a surrogate pair of ``\\u`` escapes, which TOML
    refuses, and leaves DEL unescaped, which TOML forbids."""
    out = ['"']
    for c in text:
        if c == '"' or c == "\\":
            out.append("\\" + c)
        elif c < " " or c == "\x7f":
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
    out.append('"')
    return "".join(out)
