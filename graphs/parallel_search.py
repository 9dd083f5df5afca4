"""ParallelSearch for `langgraph dev` / LangGraph Studio (graph id `parallel_search`).

Model and search come from the environment; see `langgraph_parallel.apps.studio`.
"""

from langgraph_parallel.apps.studio import studio_graph

graph = studio_graph("parallel_search")
