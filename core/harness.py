"""The API for plugin commands, trainers and figures (``dcbench`` is every plugin's): runs, atomic files and locks,
training options, statistics, progress and figures. Its modules import the engine, model and registry."""

from dcbench.publishing.figures import (
    Colours,
    Figures,
    dodge,
    mean_over,
    metric_panels,
    plain,
    points,
    pyplot,
    save_figure,
    seeds_text,
)
from dcbench.publishing.report import labels as allocator_labels
from dcbench.registry import blamed_on, get_registry
from dcbench.running.progress import progress_bar
from dcbench.running.runner import ResolvedRun, Runner, RunResult, measuring
from dcbench.running.stats import format_ci, mean_ci
from dcbench.spec import MAX_TRAINING_STEPS, config_options
from dcbench.storage.files import write_all_atomic, write_atomic, write_text_atomic
from dcbench.storage.locks import folder_lock, sole_writer
from dcbench.storage.paths import check_writable
from dcbench.storage.tables import curve_columns, write_table_atomic

__all__ = [
    # runs
    "Runner", "RunResult", "ResolvedRun", "get_registry", "blamed_on", "measuring",
    # files
    "write_atomic", "write_all_atomic", "write_text_atomic", "write_table_atomic", "curve_columns", "check_writable",
    "sole_writer", "folder_lock",
    # training
    "config_options", "MAX_TRAINING_STEPS",
    # statistics and progress
    "mean_ci", "format_ci", "progress_bar",
    # figures
    "pyplot", "save_figure", "metric_panels", "Figures", "Colours", "plain", "seeds_text", "mean_over",
    "allocator_labels", "dodge", "points",
]
