"""awm-bench's plugin: what this package contributes through the awm hooks."""
