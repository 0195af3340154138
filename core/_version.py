"""The version of dcbench, hashed into every run id: one place to bump it."""

__version__ = "0.5.1"
