"""The canonical trace: the columns a trace file has, their units, and the bounds on what is read.

A trace is a CSV or Parquet file with a header and a row per request, in
order of arrival (docs/workloads.md):

========== ======== ==========================================================
column     unit     meaning
========== ======== ==========================================================
arrival    seconds  when the request arrives; never before the row above's
duration   seconds  how long it holds what it is given (> 0); or
departure  seconds  when it leaves (> arrival), where there is no duration
cpu        cores    CPU
mem        GiB      memory
disk       GB       optional: disk
gpu        GPUs     optional: GPUs (fractions where shared)
vms        count    optional, for jobs: how many VMs the request is
gbps       Gbps     optional, for jobs: the rate of each communicating VM pair
========== ======== ==========================================================

Any other column (a ``name``, say) is left unread.
"""

from __future__ import annotations

from dcbench import DcbenchError, NotInstalledError

TIME_COLUMNS = ("arrival", "duration", "departure")
RESOURCE_COLUMNS = ("cpu", "mem", "disk", "gpu")
JOB_COLUMNS = ("vms", "gbps")
COLUMNS = TIME_COLUMNS + RESOURCE_COLUMNS + JOB_COLUMNS
REQUIRED = ("arrival", "cpu", "mem")  # and one of duration, departure
OPTIONAL_RESOURCES = ("disk", "gpu")

# Bounds that refuse a wrong file at once, far above the public traces a suite uses (the openb pod list is 8,152
# rows, 400 KB): a trace is read whole, so its rows times its columns' 8 bytes must fit in memory with room to spare.
MAX_TRACE_BYTES = 256 * 2**20
MAX_TRACE_ROWS = 2_000_000
MAX_HEADER_BYTES = 64 * 2**10
MAX_VMS = 10_000  # VMs of one job, as vmjobs allows


class TraceError(DcbenchError, ValueError):
    """A trace file that cannot be replayed or converted; the one-line message names the file, the row (rows count
    from 1, the header not counted) and the problem. A ValueError too, so that a run reports it as the workload's."""


class MissingTrace(TraceError, NotInstalledError):
    """No file where a trace should be: like a plugin not installed, `dcbench leaderboard verify` skips its runs."""
