"""Trajectory data: recording measured candidates from tuning, and reading them back."""
