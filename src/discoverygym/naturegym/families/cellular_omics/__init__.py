"""Cellular omics: generated families of single-cell and expression tasks."""
