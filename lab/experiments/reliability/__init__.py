"""The reliability experiment: injected faults and what each graph does with them."""
