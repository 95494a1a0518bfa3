"""awm-train's plugin: what this package contributes through the awm hooks."""
