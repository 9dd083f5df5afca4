"""Many users on one shared engine: levels, the engine's ceiling, a fault run, the docs block."""
