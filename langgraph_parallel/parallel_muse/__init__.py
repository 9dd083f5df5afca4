"""ParallelMuse (arXiv 2510.24698): fork the agent at its most uncertain steps, report, join.

``context`` and ``state`` (settings and typed state), ``regions`` and ``uncertainty`` (which
tokens of a step belong to which region, and how uncertain they were), ``plan`` and ``router``
(budget, branch points, sending the rollouts), ``rollout`` (runs one trajectory), ``report``
and ``reduce`` (reports and the join), ``graph`` (the factories).

Any checkpointed agent (``create_agent``, your own graph with ``messages``): ``any_agent``
(``parallel_muse_agent``), ``agent_nodes``, ``agent_thread`` (forking through the
checkpointer), ``agent_steps`` (an agent's messages as scored steps), ``agent_state``.
"""
