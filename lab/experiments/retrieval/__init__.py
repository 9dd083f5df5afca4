"""Gold-page recall and latency of every index kind."""
