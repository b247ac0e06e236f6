"""Molecular design: generated families of molecular property and reaction tasks."""
