"""ParallelSearch (arXiv 2508.09303): search independent sub-queries concurrently with ``Send``.

``fan_out`` (one ``Send`` per sub-query, and the join that makes one observation), ``search``
(one sub-query against the searcher) and ``graph`` (the factories and ``add_parallel_search``).
"""
