"""The 128-bit hash every lazy IR node and every graph is keyed by.

PyTorch: torch/csrc/lazy/core/hash.{h,cpp} (`hash_t` is a `c10::uint128`), which torch_xla
reuses, plus torch_xla/csrc/hash_util.h (`MergeHash`). A hash here is a Python int below 2**128;
C++'s wrap-around arithmetic is an `& MASK` after each product and sum. Integers passed *as a
hash* (`hash_t(101)`) are taken as they are; integers passed *to be hashed* (`Hash(int64_t)`)
go through `data_hash` of their bytes, as C++'s overloads do.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable
from typing import Any

MASK = (1 << 128) - 1
_M = 0xC6A4A7935BD1E995  # HashBlock's multiplier (MurmurHash64A's)
_R = 47
_KB = (101 << 64) | 0x27D4EB2F165667C5  # HashCombine's multiplier, uint128(101, 0x27d4...)
_GOLDEN = 0x9E3779B97F4A7C15
DATA_HASH_SEED = 0xC2B2AE3D27D4EB4F
CONTAINER_SEED = 0x85EBCA77C2B2AE63
MHASH_SEED = 0x165667B19E3779F9  # MHash() of no arguments
NULL_OPT = 0x8655D738F3678DDA  # kNullOpt: what an absent optional contributes


# --8<-- [start:hash_combine]
def hash_combine(a: int, b: int) -> int:
    """`a ^ (b * kb + 0x9e3779b97f4a7c15 + (a << 6) + (a >> 2))` in 128 bits (C++: HashCombine)."""
    # EXERCISE 10.1 (hash-combine): torch's HashCombine, wrapping at 128 bits
    return (a ^ ((b * _KB + _GOLDEN + (a << 6) + (a >> 2)) & MASK)) & MASK
    # END EXERCISE
# --8<-- [end:hash_combine]


def hash_block(data: bytes, seed: int) -> int:
    """MurmurHash64A widened to 128 bits, 16 bytes at a time (C++: HashBlock)."""
    h = (seed ^ (len(data) * _M)) & MASK
    for at in range(0, len(data), 16):
        k = int.from_bytes(data[at:at + 16], "little")  # LoadHash: a short tail is zero-padded
        k = (k * _M) & MASK
        k ^= k >> _R
        k = (k * _M) & MASK
        h ^= k
        h = (h * _M) & MASK
    h ^= h >> _R
    h = (h * _M) & MASK
    h ^= h >> _R
    return h


def data_hash(data: bytes) -> int:
    """C++: DataHash, HashBlock with the seed 0xc2b2ae3d27d4eb4f."""
    return hash_block(data, DATA_HASH_SEED)


@functools.lru_cache(maxsize=4096)  # pure; op names, shapes and small ints recur every step
def string_hash(s: str) -> int:
    return data_hash(s.encode())


@functools.lru_cache(maxsize=4096)
def _int_hash(value: int) -> int:
    return data_hash(struct.pack("<q", value) if value < 2**63 else struct.pack("<Q", value))


def hash_value(value: Any) -> int:
    """C++'s `Hash(value)` overloads: the bytes of a bool (1), an int64 (8), a double (8), a
    string; a list or tuple as a container; None as kNullOpt; a `Hashed` as itself."""
    if isinstance(value, Hashed):
        return int(value)
    if isinstance(value, bool):
        return data_hash(struct.pack("<?", value))
    if isinstance(value, int):
        return _int_hash(int(value))
    if isinstance(value, float):
        return data_hash(struct.pack("<d", value))
    if isinstance(value, str):
        return string_hash(value)
    if value is None:
        return NULL_OPT
    if isinstance(value, (list, tuple)):
        return container_hash(value)
    return string_hash(str(value))  # dtypes, devices, memory formats: by their names


class Hashed(int):
    """An int that is already a hash (C++: a `hash_t` value): `hash_value` leaves it alone."""


def container_hash(values: Iterable[Any]) -> int:
    """C++: ContainerHash, a fold of HashCombine from its own seed."""
    h = CONTAINER_SEED
    for v in values:
        h = hash_combine(h, hash_value(v))
    return h


def mhash(*values: Any) -> int:
    """C++: MHash(a, b, c) = HashCombine(Hash(a), MHash(b, c)), ending at MHash()'s seed."""
    h = MHASH_SEED
    for v in reversed(values):
        h = hash_combine(hash_value(v), h)
    return h


def merge_hash(old: int, *new: int) -> int:
    """torch_xla's MergeHash: fold each new hash into the old one, in order."""
    for h in new:
        old = hash_combine(old, h)
    return old


def hash_to_string(h: int) -> str:
    """The high 64 bits in hex without padding, then the low 64 padded (C++: HashToString)."""
    return f"{h >> 64:x}{h & (2**64 - 1):016x}"
