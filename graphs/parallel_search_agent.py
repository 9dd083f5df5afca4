"""ParallelSearch in `create_agent` for `langgraph dev` / Studio (`parallel_search_agent`).

`create_agent(model, tools=[parallel_search_tool(search)],
middleware=[ParallelSearchMiddleware()])` with the model and search from the environment; see
`langgraph_parallel.apps.studio`. Its input is `{"messages": [...]}`, as any `create_agent`'s.
"""

from langgraph_parallel.apps.studio import studio_graph

graph = studio_graph("parallel_search_agent")
