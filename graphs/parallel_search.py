"""ParallelSearch for `langgraph dev` / LangGraph Studio (graph id `parallel_search`).

Model and search come from the environment; see `langgraph_parallel.studio`.
"""

from langgraph_parallel.studio import studio_graph

graph = studio_graph("parallel_search")
