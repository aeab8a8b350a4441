"""unmix.safeio: strict YAML (duplicate keys refused, one-line errors) and restricted pickles."""

import io
import os
import pickle

import numpy as np
import pytest

from unmix.errors import ConfigError
from unmix.safeio import (
    UnsafePickleError,
    first_refused_global,
    load_restricted_pickle,
    load_yaml,
)


def _one_line(info) -> str:
    msg = str(info.value)
    assert "\n" not in msg
    return msg


def test_yaml_from_text_and_from_a_file(tmp_path):
    text = "name: x\ntrain:\n  steps: 10\n  lr: 1.0e-3\nlist: [1, 2]\n"
    want = {"name": "x", "train": {"steps": 10, "lr": 1e-3}, "list": [1, 2]}
    assert load_yaml(text) == want
    (tmp_path / "s.yaml").write_text(text, encoding="utf-8")
    assert load_yaml(tmp_path / "s.yaml") == want
    (tmp_path / "bom.yaml").write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert load_yaml(tmp_path / "bom.yaml") == want
    assert load_yaml("") is None and load_yaml("- 1\n- 2\n") == [1, 2]


@pytest.mark.parametrize(
    "text,key,line",
    [
        ("a: 1\nb: 2\na: 3\n", "a", 3),
        ("train:\n  lr: 0.1\n  steps: 5\n  lr: 0.2\n", "lr", 4),
        ("{x: 1, y: 2, x: 3}", "x", 1),
    ],
)
def test_duplicate_keys_are_refused(tmp_path, text, key, line):
    with pytest.raises(ConfigError, match=f"duplicate key '{key}' at line {line}") as info:
        load_yaml(text)
    _one_line(info)
    (tmp_path / "d.yaml").write_text(text)
    with pytest.raises(ConfigError, match=rf"d\.yaml: duplicate key '{key}' at line {line}"):
        load_yaml(tmp_path / "d.yaml")


def test_merge_keys_may_override():
    assert load_yaml("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n")["d"] == {"x": 3, "y": 2}


def test_file_errors_are_one_readable_line(tmp_path):
    with pytest.raises(ConfigError, match="file not found") as info:
        load_yaml(tmp_path / "missing.yaml")
    _one_line(info)
    with pytest.raises(ConfigError, match="is a directory") as info:
        load_yaml(tmp_path)
    _one_line(info)
    (tmp_path / "latin1.yaml").write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match=r"is not UTF-8 text \(byte 0xe9 at line 1\)") as info:
        load_yaml(tmp_path / "latin1.yaml")
    _one_line(info)


@pytest.mark.parametrize(
    "text,match",
    [
        ("a: [1, 2\n", r"invalid YAML: .*at line 2, column 1"),
        ("a: 1\n b: 2\n", r"invalid YAML: .*at line 2"),
        ("x: !!python/object/apply:os.system ['touch MARKER']\n", "invalid YAML: .*constructor"),
    ],
)
def test_invalid_yaml_is_one_readable_line(text, match):
    with pytest.raises(ConfigError, match=match) as info:
        load_yaml(text)
    _one_line(info)


class Payload:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_restricted_pickle_loads_numpy_arrays(protocol):
    data = {
        "a": [np.zeros((2, 3, 3), bool), np.arange(6, dtype=np.float32).reshape(2, 3)[:, ::2]],
        "b": (1, 2.5, "s", b"x", None, True),
        "c": np.float64(1.5),
    }
    out = load_restricted_pickle(io.BytesIO(pickle.dumps(data, protocol=protocol)))
    assert out["b"] == data["b"] and out["c"] == 1.5
    for x, y in zip(out["a"], data["a"], strict=True):
        assert x.dtype == y.dtype and np.array_equal(x, y)


def test_restricted_pickle_refuses_code(tmp_path):
    marker = tmp_path / "MARKER"
    blob = pickle.dumps({"pedestrians": [Payload(marker)]})
    with pytest.raises(UnsafePickleError, match=r"refuses to load objects of type posix\.system"):
        load_restricted_pickle(io.BytesIO(blob))
    (tmp_path / "p.pickle").write_bytes(blob)
    assert first_refused_global(tmp_path / "p.pickle") == "posix.system"
    assert not marker.exists()
