"""The ``find()`` pipeline: query analysis, candidate legs, fusion, boosts, strategies, rerank and budget."""
