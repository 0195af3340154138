"""Running: a run from its plan, sweeps and their workers, summaries, progress, statistics."""
