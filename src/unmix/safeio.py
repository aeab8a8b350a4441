"""Reading files safely: YAML with every mistake reported in one line; pickles that run nothing.

:func:`load_yaml` parses with a :class:`yaml.SafeLoader` (no Python objects are ever built from
tags) that also refuses duplicate mapping keys — PyYAML keeps the last value silently, so a
setting file with ``lr:`` twice would train with whichever came last. Every failure (missing file,
a directory, bytes that are not UTF-8, invalid YAML, a duplicate key) is a
:class:`unmix.errors.ConfigError` whose message names the file, the line and the problem.
"""

from __future__ import annotations

import os
import pickle
import warnings
from collections.abc import Collection
from pathlib import Path
from typing import IO, Any

import yaml

from unmix.errors import ConfigError

__all__ = [
    "NUMPY_ARRAY_GLOBALS",
    "RestrictedUnpickler",
    "UnsafePickleError",
    "first_refused_global",
    "load_restricted_pickle",
    "load_yaml",
]

_MERGE_TAG = "tag:yaml.org,2002:merge"


class _DuplicateKey(yaml.MarkedYAMLError):
    pass


class StrictLoader(yaml.SafeLoader):
    """:class:`yaml.SafeLoader` that raises on a key given twice in one mapping.

    Merge keys (``<<: *base``) may still override the merged mapping's keys, as YAML intends.
    """

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == _MERGE_TAG:
                    continue
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.get(key)
                except TypeError:  # unhashable key: SafeLoader reports it below
                    continue
                line = key_node.start_mark.line + 1
                if first is not None:
                    raise _DuplicateKey(
                        problem=f"duplicate key {key!r} at line {line} (first given at line "
                        f"{first}); remove one of them",
                        problem_mark=key_node.start_mark,
                    )
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _describe(err: yaml.YAMLError) -> str:
    """One line: the problem and where it is."""
    if isinstance(err, _DuplicateKey):
        return str(err.problem)
    if isinstance(err, yaml.MarkedYAMLError):
        parts = [p for p in (err.context, err.problem) if p]
        text = ", ".join(" ".join(str(p).split()) for p in parts) or "syntax error"
        mark = err.problem_mark or err.context_mark
        if mark is not None:
            text += f" at line {mark.line + 1}, column {mark.column + 1}"
        return f"invalid YAML: {text}"
    return "invalid YAML: " + " ".join(str(err).split())


def load_yaml(source: str | os.PathLike[str]) -> Any:
    """Parse YAML from a file (``source`` is a :class:`pathlib.Path` or other ``os.PathLike``) or
    from text (``source`` is a ``str``); return the data (dict, list, scalar or None).

    Raises :class:`ConfigError` in one line for a file that is missing, a directory, unreadable or
    not UTF-8, for invalid YAML, and for a duplicate key in a mapping ("duplicate key 'x' at line
    N"). A path given as a string must be wrapped in ``Path`` — a bare ``str`` is parsed as YAML.
    """
    if isinstance(source, os.PathLike):
        path = Path(source)
        where = str(path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise ConfigError(f"{where}: file not found.") from None
        except IsADirectoryError:
            raise ConfigError(f"{where} is a directory, not a YAML file.") from None
        except PermissionError:
            raise ConfigError(f"{where}: permission denied (cannot read the file).") from None
        except OSError as err:
            raise ConfigError(f"{where} cannot be read ({err.strerror or err}).") from None
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            line = raw[: err.start].count(b"\n") + 1
            raise ConfigError(
                f"{where} is not UTF-8 text (byte {raw[err.start]:#04x} at line {line}); save it "
                "as UTF-8."
            ) from None
    elif isinstance(source, str):
        where, text = "YAML text", source
    else:
        raise TypeError(f"load_yaml takes a path or a str, not {type(source).__name__}")
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 (a SafeLoader subclass)
    except yaml.YAMLError as err:
        raise ConfigError(f"{where}: {_describe(err)}.") from None
    except RecursionError:
        raise ConfigError(f"{where}: invalid YAML: nested too deeply.") from None


#: What unpickling numpy arrays (any protocol, numpy 1 or 2 module names) and numpy scalars needs;
#: dicts, lists, tuples, str, bytes, numbers and bools need no global at all.
NUMPY_ARRAY_GLOBALS: frozenset[str] = frozenset(
    f"{mod}.{name}"
    for core in ("numpy.core", "numpy._core")
    for mod, name in (
        (f"{core}.multiarray", "_reconstruct"),
        (f"{core}.multiarray", "scalar"),
        (f"{core}.numeric", "_frombuffer"),
    )
) | {"numpy.ndarray", "numpy.dtype", "_codecs.encode"}


class UnsafePickleError(pickle.UnpicklingError):
    """A pickle refers to a global (class or function) outside the allow-list; nothing of it ran."""

    def __init__(self, name: str) -> None:
        super().__init__(f"refuses to load objects of type {name}")
        self.name = name


class RestrictedUnpickler(pickle.Unpickler):
    """An unpickler that builds only the globals in ``allowed`` (``"module.name"`` strings).

    Pickled code runs only through globals (``GLOBAL``/``STACK_GLOBAL``/``INST``/``OBJ``/``EXT``
    all go through :meth:`find_class`), so refusing every other global refuses every payload.
    """

    def __init__(self, file: IO[bytes], allowed: Collection[str] = NUMPY_ARRAY_GLOBALS) -> None:
        super().__init__(file)
        self.allowed = frozenset(allowed)

    def find_class(self, module: str, name: str) -> Any:
        full = f"{module}.{name}"
        if full not in self.allowed:
            raise UnsafePickleError(full)
        with warnings.catch_warnings():  # numpy 2 warns on the numpy.core names of numpy 1 files
            warnings.simplefilter("ignore", DeprecationWarning)
            return super().find_class(module, name)

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("persistent IDs are not supported")


def load_restricted_pickle(file: IO[bytes], allowed: Collection[str] = NUMPY_ARRAY_GLOBALS) -> Any:
    """``pickle.load(file)`` that builds only ``allowed`` globals (default: numpy arrays and
    scalars); raises :class:`UnsafePickleError` naming the first other global."""
    return RestrictedUnpickler(file, allowed).load()


def first_refused_global(path: str | os.PathLike[str], allowed: Collection[str] = ()) -> str | None:
    """The first global outside ``allowed`` a pickle file refers to, found without building
    anything outside ``allowed``; None if there is none or the file is no readable pickle."""
    try:
        with open(path, "rb") as fh:
            load_restricted_pickle(fh, allowed)
    except UnsafePickleError as err:
        return err.name
    except Exception:
        return None
    return None
