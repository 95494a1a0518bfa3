"""awm tasks inside the RL frameworks users come from, on top of :mod:`awm_verify.gym`.

Each adapter is a thin shape-changer over :class:`awm_verify.TaskEnv` (the loop,
the parser, the checks and the scorer stay awm's), in an optional extra:

- :mod:`awm_verify.adapters.openenv`: an OpenEnv ``Environment`` (``awm-verify[openenv]``);
- :mod:`awm_verify.adapters.skyrl`: a SkyRL-gym ``BaseTextEnv`` registered as ``awm``
  (``awm-verify[skyrl]``);
- :mod:`awm_verify.adapters.prime`: a PrimeIntellect ``verifiers`` ``MultiTurnEnv``
  (``awm-verify[verifiers]``).
"""
