"""Errors of the runner's executors (a module of its own so that the executors and the
Ray executor, which the process executor loads on demand, need not import each other)."""


class ExecutorLost(RuntimeError):
    """The executor itself is gone (a Ray cluster's head or the driver's raylet died, no
    node with CPUs came back): no further episode can run here. The runner stops, keeps
    the records written, and the run is finished with `--resume` once the executor is
    back. Raised instead of one failed record per remaining episode."""
