"""ParallelMuse (arXiv 2510.24698): fork the agent at its most uncertain steps, report, join.

One door, ``graph`` (``create_parallel_muse_graph(rollouts, context=MuseContext(...))``), over
the agent loop or any checkpointed agent, with one rollout engine for both. ``context`` and
``state`` (settings and typed state), ``regions`` and ``uncertainty`` (which tokens of a step
belong to which region, and how uncertain they were), ``plan`` and ``router`` (budget, branch
points, sending the rollouts), ``agent_nodes`` (the input, a rollout's run of the agent, the
chosen conversation), ``agent_thread`` (forking through the checkpointer), ``agent_steps`` (an
agent's messages as scored steps), ``report`` and ``reduce`` (reports and the join).
"""
