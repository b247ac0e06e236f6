"""The `packages` suite: research task packages (published NatureBench layout) with a
hidden evaluator, scored against the published state of the art."""

from .suite import PackagesSuite

__all__ = ["PackagesSuite"]
