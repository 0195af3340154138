"""The Ray executor gives the same rows as the local one, and resumes the same way."""

import json
import os
import shutil

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from dcbench.cli import cli

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


def test_ray_sweep_matches_the_local_one_and_resumes(tmp_path):
    local, distributed = tmp_path / "local", tmp_path / "ray"
    sweep(local, "-j", "1")
    sweep(distributed, "--executor", "ray")
    rows_local = pq.read_table(local / "summary.parquet").to_pylist()
    rows_ray = pq.read_table(distributed / "summary.parquet").to_pylist()
    assert rows_ray == rows_local and len(rows_ray) == 120
    some = rows_ray[7]["run_id"]
    for name in ("requests", "timeline", "summary"):  # (json: NaN equals NaN there)
        assert json.dumps(pq.read_table(local / some / f"{name}.parquet").to_pylist()) == \
            json.dumps(pq.read_table(distributed / some / f"{name}.parquet").to_pylist())

    for row in rows_ray[:5]:
        shutil.rmtree(distributed / row["run_id"])
    (distributed / "summary.parquet").unlink()
    output = sweep(distributed, "--executor", "ray")
    assert "(115 already done)" in output
    assert pq.read_table(distributed / "summary.parquet").to_pylist() == rows_local
