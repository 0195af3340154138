"""Runs to Parquet, and what is built from them: the runner, run tables and
sweep summaries, files written atomically, sweeps, statistics, reports,
figures and the leaderboard. Imports the engine, the model and the
registry; commands and trainers build on it.

What a plugin may import from here (its public part, beside ``dcbench``'s
own): what a suite's or a topology family's figures (`Figures`) are drawn
with.
"""

from dcbench.harness.figures import Colours, Figures, mean_over, metric_panels, plain, seeds_text
from dcbench.harness.report import labels as allocator_labels

__all__ = ["Colours", "Figures", "allocator_labels", "mean_over", "metric_panels", "plain", "seeds_text"]
