"""Small plotting helpers shared by the report and the suites' report hooks.
Figures are embedded as base64 PNG so a report is one self-contained file."""

from __future__ import annotations

import base64
import io
from typing import Any

from ..core.escape import for_html


def new_figure(width_in: float = 6.0, height_in: float = 3.2) -> tuple[Any, Any]:
    """A matplotlib figure and axes on the non-interactive Agg backend."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width_in, height_in), dpi=100)
    return fig, ax


def figure_html(fig: Any, alt: str) -> str:
    """Render a figure as an <img> tag with an inline PNG, and close it."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png")
    plt.close(fig)
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return f'<img class="plot" alt="{for_html(alt, 500)}" src="data:image/png;base64,{data}">'


def histogram_html(values: list[float], title: str, xlabel: str) -> str:
    fig, ax = new_figure(4.2, 2.6)
    ax.hist(values, bins=min(30, max(5, len(set(values)))), color="#4c72b0")
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("episodes")
    return figure_html(fig, title)
