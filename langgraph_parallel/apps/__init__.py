"""What people run: the command line, the Studio graphs, and the one registry of named graphs.

``cli`` (``ask``, ``serve``, ``index``, with ``bench_cli`` and ``train``), ``studio`` (the graphs
of ``langgraph.json``), ``registry`` (graph names, Studio ids, default models) and
``experiments`` (every benchmark declared once: ``bench run NAME``, ``bench list``, ``results``).
"""
