"""The data of a generated package: the files the generator drew, handed to the build as
its declared source files (checksummed by `acquire`) and laid out here by `split`.

The draw itself happens before the build (the redraw rule needs the references' scores),
so this prepare step only places each instance's files; `split` still runs it twice and
checks the layout, the truth's side and the overlap between the splits."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

#: Under the acquired inputs: DRAWN/data/<instance>/... and DRAWN/ground_truth/<instance>/...
DRAWN = "drawn"


def place_drawn(out: Path, inputs: Path, _args: dict[str, Any]) -> None:
    """Copy the drawn data and truth of every instance into out/data and
    out/ground_truth (the layout `split` expects)."""
    for side in ("data", "ground_truth"):
        source = inputs / DRAWN / side
        if source.is_dir():
            shutil.copytree(source, out / side, symlinks=True, dirs_exist_ok=True)
