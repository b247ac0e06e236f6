"""Protein biology: generated families of sequence-function and structure tasks."""
