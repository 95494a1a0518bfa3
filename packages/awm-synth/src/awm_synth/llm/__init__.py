"""Talking to the synthesis LLM: the client, its response cache, cost accounting, request tags,
answer parsing and the replay backend that answers from recorded responses (offline runs, tests).

May import: :mod:`awm_synth.errors`, :mod:`awm_synth.config`, :mod:`awm_synth.store`.
"""
