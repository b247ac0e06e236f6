"""discoverygym: benchmarks that measure AI agents at real scientific work."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("discoverygym")
except PackageNotFoundError:  # running from a source tree without an install
    __version__ = "0.0.0+local"

__all__ = ["__version__"]
