"""ParallelSearch (arXiv 2508.09303): search independent sub-queries concurrently with ``Send``.

``fan_out`` (one ``Send`` per sub-query, and the join that makes one observation), ``search``
(one sub-query against the searcher) and ``graph`` (the factories and ``add_parallel_search``).
For langchain's ``create_agent``: ``agent_tool`` (the same fan-out as one ``search`` tool taking
``query_list``) and ``middleware`` (the decomposition instruction, the sub-query cap, the turn
limit and the graph's counters). ``loop``'s ``parallel_search_rollouts`` gives the loop to
ParallelMuse.
"""
