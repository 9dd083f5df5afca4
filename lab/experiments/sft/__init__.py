"""The trained policies against each other and closed book, and what CPU training costs."""
