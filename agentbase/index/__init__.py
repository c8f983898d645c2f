"""Derived indexes: FTS5 keyword search and vector search."""
