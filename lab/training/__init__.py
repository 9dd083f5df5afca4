"""The data recipes of the shipped policies: chain data for SFT (``train chains``)."""
