"""ParallelMuse under its shipped defaults vs 8 independent rollouts (``parallel-muse-defaults``).

:mod:`.defaults` declares the experiment; :mod:`.joins` analyses its rows, reading trees with
:mod:`.forks`, answers with :mod:`.answer_type` and a learned join with :mod:`.scorer`;
:mod:`.page` renders the tables.
"""
