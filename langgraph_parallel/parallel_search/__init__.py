"""ParallelSearch (arXiv 2508.09303): search independent sub-queries concurrently with ``Send``.

``state`` (``SubQuery``, ``SearchResult``, ``FanOutState``, ``ParallelSearchState``) and
``context`` (``SearchContext``: the loop's settings with the turn's); ``turn`` (``SearchTurn``,
the one driver of a turn: start, read, finish); ``fan_out`` (one ``Send`` per sub-query, and the
join that makes one observation), ``search`` (one sub-query against the searcher) and ``graph``
(the factories and ``add_parallel_search``).
For langchain's ``create_agent``: ``agent_tool`` (the same fan-out as one ``search`` tool taking
``query_list``), ``agent_middleware`` (the decomposition instruction, the turn limit and the
graph's counters, one middleware each) and ``middleware`` (``ParallelSearchMiddleware``, the
three in one); ``renamed`` (the settings' old names, for one release). ``loop``'s
``parallel_search_rollouts`` gives the loop to ParallelMuse.
"""
