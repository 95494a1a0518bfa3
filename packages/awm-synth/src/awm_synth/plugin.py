"""awm-synth's plugin: what this package contributes through the awm hooks."""
