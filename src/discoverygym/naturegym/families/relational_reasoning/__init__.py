"""Relational reasoning: generated families of network and graph tasks."""
