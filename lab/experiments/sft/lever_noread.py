"""Issue 37 lever run: two-sentence passages, and no reading step.

The shipped recipe with ``--passage-sentences 2``, the teacher's last think as it was before the
reading step (e60cfe1): the supporting sentences, no stated comparison. Run from the checkout:
``.venv/bin/python benchmarks/sft/lever-noread/run.py``.
"""

import sys

import langgraph_parallel.train.synth as synth

synth.reading = lambda question, titles, facts, answer, budget, grounded: grounded(budget)

from langgraph_parallel.apps.cli import main  # noqa: E402

sys.exit(
    main(
        [
            "train",
            "sft",
            "--out",
            "runs/lever-noread",
            "--per-class",
            "120",
            "--epochs",
            "3",
            "--policies",
            "parallel",
            "--passage-sentences",
            "2",
            "--save-steps",
            "10",
            "--resume",
        ]
    )
)
