"""Comparison graphs and settings: closed book (``direct``) and independent rollouts (``rollouts``).

``direct`` answers without retrieval; ``rollouts`` is ParallelMuse's baseline, a ``MuseContext``
with ``rounds=0``. The sequential Search-R1 agent is the ParallelSearch graph with
``decompose=False``, so both agents run the same code.
"""
