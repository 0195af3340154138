"""First fit, a CPU-heavy workload, a rack-locality metric and a suite:
a template of a third-party dcbench plugin package."""
