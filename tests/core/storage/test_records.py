"""JSON that dcbench reads back is parsed in bounded time and memory: too
long, nested too deeply or no regular file is one line naming the file."""

import os

import pytest

from dcbench import ResultsError
from dcbench.storage.records import MAX_JSON_BYTES, UnreadableJSON, parse_json, read_json

DEEP = "[" * 100_000  # deeper than Python's parser goes: a RecursionError, were it not caught


@pytest.mark.parametrize("text, problem", [
    (DEEP, "JSON nested more deeply than it can be parsed"),
    (DEEP.encode(), "JSON nested more deeply than it can be parsed"),
    ("[" + "0," * (MAX_JSON_BYTES // 2) + "0]", "JSON of more than the 8,388,608 bytes dcbench reads"),
])
def test_json_too_deep_or_too_long_is_refused_in_one_line(text, problem):
    with pytest.raises(UnreadableJSON) as refused:
        parse_json(text)
    assert str(refused.value) == problem and isinstance(refused.value, ValueError)


def test_json_within_the_bounds_reads_as_json_reads_it(tmp_path):
    assert parse_json('{"a": [1, 2.5, null]}') == parse_json(b'{"a": [1, 2.5, null]}') == {"a": [1, 2.5, None]}
    nested = parse_json("[" * 200 + "]" * 200)  # deep, but not too deep
    for _ in range(199):
        (nested,) = nested
    assert nested == []
    path = tmp_path / "record.json"
    path.write_text('{"steps": 3}')
    assert read_json(path) == {"steps": 3}
    with pytest.raises(ValueError):
        parse_json(b"\xff")  # not UTF-8


def test_a_json_file_that_is_no_regular_file_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "record.json")  # no one ever writes to it
    for path in (tmp_path / "record.json", tmp_path):
        with pytest.raises(OSError) as refused:
            read_json(path)
        assert str(refused.value) == f"[Errno 22] not a file but a folder, a device or a pipe: '{path}'"


def test_a_journal_nested_too_deeply_is_named_as_damaged(tmp_path):
    from dcbench.storage.journal import recover

    journal = tmp_path / ".dcbench-txn-0123456789abcdef.journal"
    journal.write_text(DEEP)
    with pytest.raises(ResultsError) as refused:
        recover([tmp_path / "x.pt"])
    assert str(refused.value).startswith(f"'{journal}' is a damaged dcbench journal (UnreadableJSON: JSON nested more "
                                         "deeply than it can be parsed); remove it")


def test_a_lock_file_nested_too_deeply_names_no_holder(tmp_path):
    from dcbench.storage.locks import _holder

    (tmp_path / ".dcbench.lock").write_text(DEEP)
    descriptor = os.open(tmp_path / ".dcbench.lock", os.O_RDONLY)
    try:
        assert _holder(descriptor) == {}
    finally:
        os.close(descriptor)


def test_a_policy_record_nested_too_deeply_is_named(tmp_path):
    from dcbench import SpecError
    from dcbench.envs.evaluate import _read_record

    (tmp_path / "policy.json").write_text(DEEP)
    with pytest.raises(SpecError) as refused:
        _read_record(tmp_path)
    assert str(refused.value) == (f"the policy store's '{tmp_path / 'policy.json'}' does not read (UnreadableJSON: "
                                  "JSON nested more deeply than it can be parsed); remove that folder and add the "
                                  "policy again")
