"""Comparison graphs: ``direct`` answers closed-book, without retrieval.

The sequential Search-R1 agent is the ParallelSearch graph with ``decompose=False``, so both
agents run the same code.
"""
