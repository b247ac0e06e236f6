"""Pictures of observations for the visual variant (Pillow): the box seen from above,
each observed particle a disc drawn to scale at its (noisy) measured position."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw

IMAGE_SIZE_PX = 512
# Distinct colours so particles can be told apart across pictures.
PALETTE = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]


def render_discs(xy: np.ndarray, radius: np.ndarray, *, labels: list[int], half_width: float,
                 title: str = "", size_px: int = IMAGE_SIZE_PX) -> bytes:
    """PNG bytes of discs centred at `xy` (K, 2, box units) with radii `radius` (K,), inside
    the square [-half_width, half_width]^2 (x to the right, y up), numbered by `labels`."""
    margin = 24
    scale = (size_px - 2 * margin) / (2 * half_width)
    image = Image.new("RGB", (size_px, size_px), "white")
    draw = ImageDraw.Draw(image)
    draw.rectangle([margin, margin, size_px - margin, size_px - margin], outline="black")

    def to_px(x: float, y: float) -> tuple[float, float]:
        return margin + (x + half_width) * scale, size_px - margin - (y + half_width) * scale

    for (x, y), r, label in zip(np.asarray(xy), np.asarray(radius), labels, strict=True):
        cx, cy = to_px(float(x), float(y))
        rp = max(float(r) * scale, 1.0)
        colour = PALETTE[label % len(PALETTE)]
        draw.ellipse([cx - rp, cy - rp, cx + rp, cy + rp], fill=colour, outline="black")
        draw.text((cx + rp + 2, cy - rp - 2), str(label), fill="black")
    if title:
        draw.text((margin, 4), title, fill="black")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return buffer.getvalue()
