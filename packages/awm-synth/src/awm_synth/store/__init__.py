"""What a synthesis run keeps on disk: artifacts, checkpoints (so a killed run resumes),
atomic writes and the finished bundle.
"""
