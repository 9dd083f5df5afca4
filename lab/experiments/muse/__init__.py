"""ParallelMuse against independent rollouts, and over a ``create_agent`` app."""
