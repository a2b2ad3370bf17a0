"""testtask: replicate papers on how training data relates to the test task."""

__version__ = "0.1.0"
