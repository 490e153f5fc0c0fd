"""Stage 12: the complete system."""

from . import prng, random, special

__all__ = ["prng", "random", "special"]
