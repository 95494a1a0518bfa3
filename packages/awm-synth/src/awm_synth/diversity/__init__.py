"""Keeping a synthesized set varied: scenario seeds, embeddings, de-duplication and diversity scores."""
