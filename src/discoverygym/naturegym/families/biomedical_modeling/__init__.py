"""Biomedical modeling: generated families of pharmacological and epidemic tasks."""
