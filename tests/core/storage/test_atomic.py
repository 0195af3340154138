"""Files written together survive SIGKILL at every step of their write: after
`recover` (which the next write runs first) they are all old or all new, and
nothing of the write is left beside them."""

import os
import signal
from pathlib import Path

import pytest

from dcbench.harness import write_all_atomic, write_atomic
from dcbench.storage import journal as atomic

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="kills a forked writer")

# A checkpoint, its record beside it and its training state in a folder below: three files, two folders.
NAMES = ("x.pt", "x.json", "x.pt.train/state.pt")


def files(root: Path) -> dict[str, str]:
    return {str(path.relative_to(root)): path.read_text() for path in sorted(root.rglob("*")) if path.is_file()}


def writers(root: Path, text: str) -> list:
    return [(root / name, lambda path, text=text: path.write_text(text)) for name in NAMES]


def killed_at(step: int, write) -> int:
    """Run ``write`` in a child process that SIGKILLs itself once ``step``
    steps of the write are done; the number of steps it did."""
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:  # (never returns: no test code runs twice)
        try:
            done = []

            def hook(name: str) -> None:
                done.append(name)
                os.write(writer, b".")
                if len(done) == step:
                    os.kill(os.getpid(), signal.SIGKILL)

            atomic.fault_hook = hook
            write()
        finally:
            os._exit(0)
    os.close(writer)
    steps = b""
    while chunk := os.read(reader, 100):
        steps += chunk
    os.close(reader)
    _, status = os.waitpid(child, 0)
    assert os.WIFSIGNALED(status) == (len(steps) == step)
    return len(steps)


def steps_of_a_write(tmp_path: Path) -> int:
    folder = tmp_path / "count"
    steps = killed_at(10_000, lambda: write_all_atomic(writers(folder, "new")))
    assert set(files(folder).values()) == {"new"}
    return steps


@pytest.mark.parametrize("before", ["old", None])  # the files were there, or not yet
def test_a_write_killed_at_any_step_leaves_all_old_or_all_new_files_and_nothing_else(tmp_path, before):
    steps = steps_of_a_write(tmp_path)
    assert steps == 2 + 3 + 2 + 3 + 2  # markers, temporaries, journal written and renamed, renames, removals
    for step in range(1, steps + 1):
        root = tmp_path / f"killed-{step}"
        if before is not None:
            write_all_atomic(writers(root, before))
        old = files(root)
        assert killed_at(step, lambda: write_all_atomic(writers(root, "new"))) == step
        atomic.recover([root / name for name in NAMES])
        now = files(root)
        committed = step >= 2 + 3 + 2  # the journal is in place
        assert now == ({name: "new" for name in NAMES} if committed else old), f"killed after step {step}"


def test_recovering_one_of_the_files_settles_them_all_and_the_rest_goes_with_the_next_write(tmp_path):
    for step in (3, 7, 9):  # a temporary written; the commit; one rename done
        root = tmp_path / f"killed-{step}"
        write_all_atomic(writers(root, "old"))
        killed_at(step, lambda: write_all_atomic(writers(root, "new")))
        atomic.recover([root / "x.pt.train" / "state.pt"])  # the training state's folder only
        assert len({(root / name).read_text() for name in NAMES}) == 1
        write_all_atomic(writers(root, "newer"))
        assert files(root) == {name: "newer" for name in NAMES}


def test_a_single_file_written_after_a_killed_write_is_not_undone_by_a_later_recovery(tmp_path):
    write_all_atomic(writers(tmp_path, "old"))
    killed_at(7, lambda: write_all_atomic(writers(tmp_path, "new")))  # committed, nothing renamed
    write_atomic(tmp_path / "x.json", lambda path: path.write_text("edited"))
    atomic.recover([tmp_path / "x.pt"])
    assert files(tmp_path) == {"x.pt": "new", "x.json": "edited", "x.pt.train/state.pt": "new"}


@pytest.mark.parametrize("settle", [lambda folder: atomic.recover([folder / name for name in NAMES]),
                                    atomic.remove_leftovers])
def test_a_write_under_way_is_left_alone_by_a_recovery(tmp_path, settle):
    """A second process's recovery (another command writing beside it: a
    training's checkpoint in a results folder) must not take a live write's
    temporary files for a killed one's."""
    write_all_atomic(writers(tmp_path, "old"))
    go_on, told = os.pipe()
    paused, pausing = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            def pause(name: str) -> None:
                if name == "temporary":
                    os.write(pausing, b".")
                    os.read(go_on, 1)

            atomic.fault_hook = pause
            write_all_atomic(writers(tmp_path, "new"))
        finally:
            os._exit(0)
    os.read(paused, 1)  # the first temporary is written
    settle(tmp_path)
    assert any(".tmp-" in name for name in os.listdir(tmp_path))
    os.write(told, b"...")
    _, status = os.waitpid(child, 0)
    assert os.WIFEXITED(status)
    assert files(tmp_path) == {name: "new" for name in NAMES}


@pytest.mark.parametrize("stop", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_ctrl_c_or_a_failure_before_the_commit_leaves_the_files_as_they_were(tmp_path, stop):
    write_all_atomic(writers(tmp_path, "old"))

    def stopped(path: Path) -> None:
        raise stop

    with pytest.raises(type(stop)) as raised:
        write_all_atomic([*writers(tmp_path, "new")[:2], (tmp_path / "x.pt.train" / "state.pt", stopped)])
    if isinstance(stop, OSError):
        assert raised.value.filename == str(tmp_path / "x.pt.train" / "state.pt")
    assert files(tmp_path) == {name: "old" for name in NAMES}
    assert sorted(os.listdir(tmp_path)) == ["x.json", "x.pt", "x.pt.train"]


@pytest.mark.parametrize("before", ["old", None])
def test_a_rename_refused_after_the_commit_puts_back_the_files_already_renamed(tmp_path, monkeypatch, before):
    if before:
        write_all_atomic(writers(tmp_path, before))
    replace = os.replace

    def immutable(source, target):  # as a file made immutable (chattr +i) refuses
        if Path(target).name == "state.pt":
            raise PermissionError(1, "Operation not permitted")
        return replace(source, target)

    monkeypatch.setattr(atomic.os, "replace", lambda s, t: immutable(s, t) if ".tmp-" in str(s) else replace(s, t))
    with pytest.raises(PermissionError) as raised:
        write_all_atomic(writers(tmp_path, "new"))
    assert raised.value.filename == str(tmp_path / "x.pt.train" / "state.pt")
    assert files(tmp_path) == ({name: "old" for name in NAMES} if before else {})
    assert [p.name for p in tmp_path.rglob(".*")] == []


def test_leftovers_of_dcbenchs_writers_are_removed_and_nothing_else(tmp_path):
    killed_at(3, lambda: write_all_atomic(writers(tmp_path, "new")))  # markers and a temporary
    left = {".summary.parquet.tmp-ab12_xyz": "file", ".0123456789abcdef.tmp-k2j4h5g6": "folder",
            ".0123456789abcdef.old-k2j4h5g6": "folder", ".x.json.old-4242": "file",
            ".dcbench-probe-q1w2e3r4": "file"}
    kept = {"notes.tmp-1": "file", ".hidden": "file", "run": "folder", ".x.tmp": "file"}
    for name, kind in {**left, **kept}.items():
        (tmp_path / name).mkdir() if kind == "folder" else (tmp_path / name).write_text("")
    removed = atomic.remove_leftovers(tmp_path)
    assert set(left) <= set(removed)
    assert sorted(os.listdir(tmp_path)) == sorted([*kept, "x.pt.train"])
    atomic.recover([tmp_path / "x.pt.train" / "state.pt"])  # the killed write's other folder
    assert os.listdir(tmp_path / "x.pt.train") == []
