"""ParallelMuse (arXiv 2510.24698): fork the agent at its most uncertain steps, report, join.

One door, ``graph`` (``create_parallel_muse_graph(rollouts, context=MuseContext(...))``), over
the agent loop or any checkpointed agent. ``context`` and ``state`` (settings and typed state),
``regions`` and ``uncertainty`` (which tokens of a step belong to which region, and how
uncertain they were), ``plan`` and ``router`` (budget, branch points, sending the rollouts),
``rollout`` (one trajectory of the loop, a subgraph), ``report`` and ``reduce`` (reports and
the join).

Over a checkpointed agent (``create_agent``, your own graph with ``messages``): ``agent_nodes``,
``agent_thread`` (forking through the checkpointer), ``agent_steps`` (an agent's messages as
scored steps), ``agent_state``.
"""
