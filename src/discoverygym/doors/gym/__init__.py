"""The Gymnasium door (the `[gym]` extra): importing this package registers
`discoverygym/<Suite>-v1` for every registered suite (env.py)."""

from .env import DiscoveryEnv, register_all

__all__ = ["DiscoveryEnv", "register_all"]
