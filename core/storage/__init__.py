"""Storage: files written atomically, Parquet tables, paths, locks, bounded reads."""
