"""Protein biology families (NatureBench domain "protein biology")."""
