"""A build function for PooledBuilder tests, pickled by value into the worker processes."""


def slow_then_build(mod, target):
    """Sleeps far past any test timeout for modules with a buffer named 'slow_*'."""
    import time

    from cwm.tuning.pooled_builder import build_in_worker

    if "slow_" in mod.script():
        time.sleep(60)
    return build_in_worker(mod, target)
