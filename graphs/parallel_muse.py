"""ParallelMuse for `langgraph dev` / LangGraph Studio (graph id `parallel_muse`).

Forks the agent at its most uncertain steps, then reports and aggregates. Model and search come
from the environment; see `langgraph_parallel.apps.studio`.
"""

from langgraph_parallel.apps.studio import studio_graph

graph = studio_graph("parallel_muse")
