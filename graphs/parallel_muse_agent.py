"""ParallelMuse over a `create_agent` app, for `langgraph dev` / Studio (`parallel_muse_agent`).

The `parallel_search_agent` app (`create_agent` with ParallelSearch's tool and middleware, its
own `InMemorySaver`) given to `create_parallel_muse_graph`: run once, forked at its most uncertain
steps through its checkpoints, joined. Input `{"messages": [...]}` (or `{"question": ...}`);
model and search from the environment, see `langgraph_parallel.apps.studio`.
"""

from langgraph_parallel.apps.studio import studio_graph

graph = studio_graph("parallel_muse_agent")
