"""Environments over MCP: stdio and streamable HTTP, one instance per session.

May import: :mod:`awm_envs.runtime`, :mod:`awm_envs.pool`, :mod:`awm_envs.bundle`.
"""
