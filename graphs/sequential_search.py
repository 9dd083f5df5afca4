"""The sequential Search-R1 baseline for `langgraph dev` / Studio (graph id `sequential_search`).

Same nodes as ParallelSearch, one query per turn. Model and search come from the environment;
see `langgraph_parallel.apps.studio`.
"""

from langgraph_parallel.apps.studio import studio_graph

graph = studio_graph("sequential_search")
