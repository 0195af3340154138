"""One writer per results folder or checkpoint: a second is refused in one
line naming the first, and a killed holder never leaves the lock held."""

import os
import signal

import pytest
from click.testing import CliRunner

from dcbench import ResultsError
from dcbench.commands import cli
from dcbench.storage.locks import file_lock, folder_lock, sole_writer

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="holds the lock in a forked process")


def held_elsewhere(lock, command, written):
    """A child process that holds ``lock`` until it is killed: its pid."""
    ready, told = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            with sole_writer(lock, command, written):
                os.write(told, b".")
                signal.pause()
        finally:
            os._exit(0)
    os.close(told)
    assert os.read(ready, 1) == b"."
    os.close(ready)
    return child


def test_a_second_writer_is_refused_naming_the_first_and_a_killed_one_leaves_nothing_held(tmp_path):
    out = tmp_path / "results"
    holder = held_elsewhere(folder_lock(out), "sweep", out)
    try:
        with pytest.raises(ResultsError) as refused:
            with sole_writer(folder_lock(out), "run", out):
                pass
        assert str(refused.value) == (f"another dcbench sweep is writing to '{out}' (pid {holder}); wait for it or "
                                      "choose another --out")
    finally:
        os.kill(holder, signal.SIGKILL)
        os.waitpid(holder, 0)
    assert (out / ".dcbench.lock").exists()  # a killed holder's file stays; its lock went with it
    with sole_writer(folder_lock(out), "run", out):
        assert os.listdir(out) == [".dcbench.lock"]
    assert os.listdir(out) == []  # released and removed


def test_a_folder_made_for_the_lock_alone_is_removed_with_it(tmp_path):
    out = tmp_path / "new" / "results"
    with sole_writer(folder_lock(out), "sweep", out):
        assert out.is_dir()
    assert os.listdir(tmp_path) == []


def test_two_trainings_to_one_checkpoint_are_one_too_many(tmp_path):
    out = tmp_path / "my.pt"
    holder = held_elsewhere(file_lock(out), "train", out)
    try:
        result = CliRunner().invoke(cli, ["train", "-a", "gnn_ppo", "-t", "tiered:8,1x4", "--steps", "1",
                                          "--out", str(out), "-q"])
    finally:
        os.kill(holder, signal.SIGKILL)
        os.waitpid(holder, 0)
    assert result.exit_code == 2
    assert result.output == (f"Error: another dcbench train is writing to '{out}' (pid {holder}); wait for it or "
                             "choose another --out\n")
    assert os.listdir(tmp_path) == [".my.pt.lock"]  # (the killed holder's)

