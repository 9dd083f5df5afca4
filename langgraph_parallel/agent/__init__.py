"""The Search-R1 step loop both papers build on.

``context`` (the run's settings), ``state`` (typed state and reducers), ``think`` (one model call
per step: prompt, constrained decoding, parse, route), ``chat`` (the chat view of a run, kept
apart from the model's transcript) and ``run`` (a question through a graph).
"""
