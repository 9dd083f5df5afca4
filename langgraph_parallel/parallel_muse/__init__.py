"""ParallelMuse (arXiv 2510.24698): fork the agent at its most uncertain steps, report, join.

``context`` and ``state`` (settings and typed state), ``regions`` and ``uncertainty`` (which
tokens of a step belong to which region, and how uncertain they were), ``router`` (picks branch
points), ``rollout`` (runs one trajectory), ``reduce`` (reports and the join), ``graph`` (the
factories).
"""
