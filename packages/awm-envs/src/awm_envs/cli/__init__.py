"""``awm envs ...``: the command group and its sub-commands, attached by :mod:`awm_envs.plugin`.

The only layer that may import every other one.
"""
