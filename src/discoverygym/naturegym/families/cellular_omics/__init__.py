"""Cellular omics families (NatureBench domain "cellular omics")."""
