"""Environment bundles shipped with awm-envs (one folder per environment)."""
