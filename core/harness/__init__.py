"""Runs to Parquet, and what is built from them: the runner, run tables and
sweep summaries, files written atomically, sweeps, statistics, reports,
figures and the leaderboard. Imports the engine, the model and the
registry; commands and trainers build on it."""
