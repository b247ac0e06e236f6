"""The scoring rule of the gravity suite, in one function."""

from __future__ import annotations

import math
from typing import Any

from ...core import Score


def score_answer(answer: Any, truth: float | bool, *, answer_type: str,
                 threshold: float) -> Score:
    """Pass when |answer - truth| / |truth| <= threshold (numbers) or answer == truth
    (booleans, exact). A malformed answer (wrong type, not finite) fails with a reason."""
    if answer_type == "boolean":
        if not isinstance(answer, bool):
            return Score(False, 0.0, "exact_match", None, None, truth,
                         error=f"malformed answer {answer!r}: expected true or false")
        passed = answer == bool(truth)
        return Score(passed, float(passed), "exact_match", 0.0 if passed else 1.0, 0.0, truth)
    if isinstance(answer, bool) or not isinstance(answer, int | float) \
            or not math.isfinite(answer):
        return Score(False, 0.0, "relative_error", None, threshold, truth,
                     error=f"malformed answer {answer!r}: expected a finite number")
    relative_error = abs(float(answer) - float(truth)) / abs(float(truth))
    passed = relative_error <= threshold
    return Score(passed, float(passed), "relative_error", relative_error, threshold, truth)
