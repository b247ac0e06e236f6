"""Relational reasoning: generated families on networks (link prediction, communities)."""
