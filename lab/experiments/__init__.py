"""The declared experiments: one module or folder each (:mod:`lab.catalog` lists them)."""
