"""Run files: nothing executes from a checkpoint, writes are atomic and ordinary, JSON is strict."""

import json
import os
import pickle
import stat

import pytest
import torch

from unmix import runs
from unmix.errors import CheckpointError
from unmix.settings import Setting
from unmix.train import train


def tiny() -> Setting:
    return Setting.from_dict(
        {
            "name": "tiny",
            "latent": {"space": "sphere", "dim": 3, "conditional": {"kind": "vmf", "kappa": 5.0}},
            "model": {"hidden": [4, 4]},
            "train": {
                "steps": 10,
                "batch_size": 32,
                "eval_every": 5,
                "eval_samples": 128,
                "checkpoint_every": 5,
            },
        }
    )


class Payload:
    """Unpickling this would create ``marker``: what a malicious checkpoint does."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def _state(marker) -> dict:
    return {
        "step": 5,
        "setting": tiny().to_dict(),
        "encoder": Payload(marker),
        "optimizer": None,
        "scheduler": None,
        "generator": torch.Generator().get_state(),
        "history": [],
    }


@pytest.mark.parametrize("fmt", ["torch.save", "pickle.dump"])
def test_a_checkpoint_that_would_run_code_is_refused(tmp_path, fmt):
    marker, path = tmp_path / "MARKER", tmp_path / runs.CHECKPOINT
    if fmt == "torch.save":
        torch.save(_state(marker), path)
    else:
        path.write_bytes(pickle.dumps(_state(marker)))
    with pytest.raises(
        CheckpointError,
        match=r"refuses to load objects of type posix\.system.*"
        r"not written by unmix",
    ) as info:
        runs.load_checkpoint(path)
    assert "\n" not in str(info.value)
    assert not marker.exists()


def test_resume_from_a_malicious_checkpoint_runs_nothing(tmp_path):
    run_dir, marker = tmp_path / "run", tmp_path / "MARKER"
    run_dir.mkdir()
    torch.save(_state(marker), run_dir / runs.CHECKPOINT)
    with pytest.raises(CheckpointError, match="refuses to load objects of type"):
        train(tiny(), run_dir, resume=True)
    assert not marker.exists()


def test_a_real_checkpoint_loads_with_weights_only_and_resumes(tmp_path):
    train(tiny(), tmp_path / "run")
    state = torch.load(tmp_path / "run" / runs.CHECKPOINT, weights_only=True)
    assert set(runs.CHECKPOINT_KEYS) <= set(state)
    assert state["generator"].dtype == torch.uint8
    assert runs.load_checkpoint(tmp_path / "run" / runs.CHECKPOINT)["step"] == 10
    assert train(tiny(), tmp_path / "run", resume=True).summary["resumed_from_step"] == 10


def test_numpy_scalars_are_saved_as_numbers(tmp_path):
    np = pytest.importorskip("numpy")
    state = {**_state(tmp_path / "M"), "encoder": {}, "history": [{"r2": np.float64(0.5)}]}
    runs.save_checkpoint(tmp_path / "c.pt", state)
    assert runs.load_checkpoint(tmp_path / "c.pt")["history"] == [{"r2": 0.5}]


def test_a_checkpoint_that_is_not_a_dict_or_lacks_keys_is_refused(tmp_path):
    torch.save([1, 2, 3], tmp_path / "list.pt")
    with pytest.raises(CheckpointError, match="holds a list, not the dict"):
        runs.load_checkpoint(tmp_path / "list.pt")
    state = _state(tmp_path / "M")
    del state["generator"], state["encoder"]
    torch.save(state, tmp_path / "partial.pt")
    with pytest.raises(CheckpointError, match="lacks the keys 'encoder', 'generator'"):
        runs.load_checkpoint(tmp_path / "partial.pt")
    (tmp_path / "junk.pt").write_bytes(b"\x00junk")
    with pytest.raises(CheckpointError, match="corrupt or unreadable") as info:
        runs.load_checkpoint(tmp_path / "junk.pt")
    assert "\n" not in str(info.value)


def test_atomic_writes_are_ordinary_files_and_leave_no_temporaries(tmp_path):
    old = os.umask(0o027)
    try:
        runs.atomic_write_text(tmp_path / "a.txt", "hello")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o640  # 0o666 & ~0o027
    runs.write_json(tmp_path / "b.json", {"x": 1})
    assert stat.S_IMODE((tmp_path / "b.json").stat().st_mode) == 0o666 & ~old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.json"]


def test_a_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    runs.atomic_write_text(tmp_path / "a.txt", "old")

    def boom(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError, match="disk full"):
        runs.atomic_write_text(tmp_path / "a.txt", "new")
    assert (tmp_path / "a.txt").read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


def test_clean_temp_files_removes_only_stale_temporaries(tmp_path):
    for name in (
        ".summary.json.abc123.tmp",
        ".checkpoint.pt.x.tmp",
        "keep.tmp",
        ".lock",
        "summary.json",
    ):
        (tmp_path / name).write_text("x")
    removed = runs.clean_temp_files(tmp_path)
    assert sorted(p.name for p in removed) == [".checkpoint.pt.x.tmp", ".summary.json.abc123.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".lock", "keep.tmp", "summary.json"]
    assert runs.clean_temp_files(tmp_path / "missing") == []


def test_json_is_strict(tmp_path):
    np = pytest.importorskip("numpy")
    runs.write_json(
        tmp_path / "s.json",
        {
            "a": float("nan"),
            "b": [float("inf"), -float("inf"), 1.5],
            "c": {"d": np.float32("nan"), "e": torch.tensor(2.0)},
            "p": tmp_path,
        },
    )
    text = (tmp_path / "s.json").read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {
        "a": None,
        "b": [None, None, 1.5],
        "c": {"d": None, "e": 2.0},
        "p": str(tmp_path),
    }


@pytest.mark.parametrize(
    "content,match",
    [
        ("[]", "holds a JSON array, not an object"),
        ('"x"', "holds a JSON string"),
        ('{"a": ', "not valid JSON"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_read_json_refuses_what_is_not_an_object(tmp_path, content, match):
    path = tmp_path / "f.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(CheckpointError, match=match) as info:
        runs.read_json(path)
    assert "\n" not in str(info.value)


def test_read_json_names_missing_keys(tmp_path):
    runs.write_json(tmp_path / "f.json", {"a": 1})
    with pytest.raises(CheckpointError, match="lacks the key 'status'"):
        runs.read_json(tmp_path / "f.json", required=("a", "status"))


@pytest.mark.parametrize("summary", ["[]", "{}", '{"status": "finished"}', "null", "{"])
def test_a_broken_summary_is_not_finished(tmp_path, summary):
    (tmp_path / runs.SUMMARY).write_text(summary)
    assert runs.is_finished(tmp_path) is False
    with pytest.raises(CheckpointError) as info:
        runs.load_summary(tmp_path)
    assert "\n" not in str(info.value)


def test_run_lock_is_exclusive_and_reentrant(tmp_path):
    import threading

    with runs.run_lock(tmp_path / "run"):
        with runs.run_lock(tmp_path / "run"):  # same thread: re-entrant
            pass
        errors = []

        def other():
            try:
                with runs.run_lock(tmp_path / "run"):
                    pass
            except runs.RunLocked as err:
                errors.append(str(err))

        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert errors and "locked by another process" in errors[0]
    with runs.run_lock(tmp_path / "run"):  # released
        pass


def test_refusal_does_not_depend_on_the_pre_scan(tmp_path, monkeypatch):
    marker = tmp_path / "MARKER"
    torch.save(_state(marker), tmp_path / "c.pt")
    monkeypatch.delattr(torch.serialization, "get_unsafe_globals_in_checkpoint")
    with pytest.raises(CheckpointError, match=r"refuses to load objects of type posix\.system"):
        runs.load_checkpoint(tmp_path / "c.pt")
    assert not marker.exists()


def test_a_non_editable_install_still_records_its_commit(monkeypatch, tmp_path):
    """pip's direct_url.json: a VCS install's commit_id, or the git commit of the directory a
    wheel was built from (the source tree itself is not a checkout then)."""
    import json as _json

    class Dist:
        def __init__(self, info):
            self.info = info

        def read_text(self, name):
            return _json.dumps(self.info) if name == "direct_url.json" else None

    monkeypatch.setattr(runs, "_commit_of", lambda d: None if d != tmp_path else "abc123")
    monkeypatch.setattr(
        runs.metadata,
        "distribution",
        lambda n: Dist({"url": "git+https://x", "vcs_info": {"commit_id": "f00d"}}),
    )
    assert runs.git_commit() == "f00d"
    monkeypatch.setattr(runs.metadata, "distribution", lambda n: Dist({"url": tmp_path.as_uri()}))
    assert runs.git_commit() == "abc123"
