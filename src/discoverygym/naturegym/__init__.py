"""NatureGym: build a task package from a versioned record T = (A, D, M, S, B).

`record.py` holds the record format, `stages.py` the stages and their gates, `build.py`
the resumable, atomic driver (`build(record, work_dir)`), `firewall.py` the
record-derived information firewall, `metrics.py` the named metrics whose evaluators
are generated, and `review.py` the optional LLM review. `families/`, `generate.py`,
`release.py` and `calibration.py` draw packages from the project's simulators
(`package generate`, `verify-release`, `calibrate-generated`); each drawn package is a
record built by the same stages."""

from .build import BuildResult, build
from .record import Record, RecordError, load_record

__all__ = ["BuildResult", "Record", "RecordError", "build", "load_record"]
