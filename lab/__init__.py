"""Every benchmark of the project, declared once: ``langgraph-parallel bench run NAME``.

An experiment (:class:`~lab.base.Experiment`) names its
questions, graphs and models and its settings, runs them through the one harness (``bench``,
resumable), analyses the rows and writes its tables; :mod:`.catalog` lists them all
(``langgraph-parallel bench list``). Each run also writes a ``summary.json`` saying which commit,
models, adapters and machine made the figures and how long it took (:mod:`.record`), and leaves
its rows compressed (``results.jsonl.gz``). The result blocks of README.md and docs/ are
rendered from the committed files by :mod:`.results` (``langgraph-parallel results``), among
them the index of every experiment and run folder with its stale verdict (:mod:`.results_index`).

These modules sit in ``apps`` because they run the named graphs and models of
:mod:`langgraph_parallel.apps.registry` and are started from its command line.
"""
