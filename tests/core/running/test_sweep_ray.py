"""The Ray executor gives the same rows as the local one, and resumes the same way."""

import json
import os
import shutil

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dcbench.commands import cli

try:
    import ray  # noqa: F401
except ImportError:
    if os.environ.get("CI"):
        raise
    pytest.skip("Ray is not installed (pip install 'dcbench[ray]')", allow_module_level=True)


def sweep(out, *extra):
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "random,tetris", "--out", str(out), "-q",
                                      *extra])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.slow  # starts a Ray cluster
def test_ray_sweep_matches_the_local_one_and_resumes(tmp_path):
    local, distributed = tmp_path / "local", tmp_path / "ray"
    sweep(local, "-j", "1")
    sweep(distributed, "--executor", "ray")
    rows_local = pq.read_table(local / "summary.parquet").to_pylist()
    rows_ray = pq.read_table(distributed / "summary.parquet").to_pylist()
    assert json.dumps(rows_ray) == json.dumps(rows_local) and len(rows_ray) == 120  # (NaN equals NaN in json)
    some = rows_ray[7]["run_id"]
    for name in ("requests", "timeline", "summary"):  # (json: NaN equals NaN there)
        assert json.dumps(pq.read_table(local / some / f"{name}.parquet").to_pylist()) == \
            json.dumps(pq.read_table(distributed / some / f"{name}.parquet").to_pylist())

    for row in rows_ray[:5]:
        shutil.rmtree(distributed / row["run_id"])
    (distributed / "summary.parquet").unlink()
    output = sweep(distributed, "--executor", "ray")
    assert "(115 already done)" in output
    assert json.dumps(pq.read_table(distributed / "summary.parquet").to_pylist()) == json.dumps(rows_local)


@pytest.mark.parametrize("address, fragment", [
    ("127.0.0.1:{port}", "no Ray cluster answers at 127.0.0.1:{port} ("),
    ("ray://127.0.0.1:{port}", "no Ray cluster answers at ray://127.0.0.1:{port} ("),
    ("a-head-node", "--address 'a-head-node' is not HOST:PORT (or ray://HOST:PORT)"),
    ("127.0.0.1:\uff16\uff13\uff17\uff19", "--address '127.0.0.1:\uff16\uff13\uff17\uff19' is not HOST:PORT"),
])
def test_an_address_where_no_cluster_answers_is_refused_at_once(tmp_path, address, fragment):
    import socket

    with socket.socket() as probe:  # a port that was free a moment ago: nothing listens there
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = CliRunner().invoke(cli, ["sweep", "-s", "nara2022", "-a", "random", "--executor", "ray",
                                      "--address", address.format(port=port), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and result.output.count("\n") == 1
    assert result.output.startswith(f"Error: {fragment.format(port=port)}")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
