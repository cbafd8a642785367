"""Trajectory data: recording measured candidates from tuning, and reading them back.

The collector that fills a dataset runs tuning, so it lives above this package, in
:mod:`cwm.tuning.collect`; the command line is :mod:`cwm.dataset_cli` (docs/architecture.md).
"""
