"""``numpy.random.default_rng(seed).permutation(n)`` in plain Python, bit for bit: a shuffle that is
part of the measurement, so the same on every machine whatever numpy is installed.

The abstention suite's shuffled control permutes ids with numpy's default generator (PCG64 seeded
through SeedSequence), and the permutation is recorded in every results file and baseline. numpy
keeps its bit generators' streams stable but not those of ``Generator`` methods such as
``permutation`` (its compatibility policy allows them to change between releases), and a gate
whose baseline must be byte-identical on any machine cannot let an upgrade of numpy reshuffle a
control. So the algorithms are written out here and pinned: SeedSequence's hash mixing, PCG64
(XSL-RR output, 128-bit LCG), its buffered 32-bit draws, the masked rejection sampling of
``random_interval`` and the Fisher-Yates walk of ``Generator.shuffle``. The tests compare this
module with the installed numpy over many seeds and sizes: a numpy release that changed its
stream would fail them, and the gate would still shuffle as before. (It also spares the gate
process importing numpy, which only the reference memory needs.)
"""

from __future__ import annotations

from collections.abc import Iterator

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF
_M128 = (1 << 128) - 1
_PCG_MULT = 0x2360ED051FC65DA44385DF649FCCF645

# SeedSequence constants (numpy.random.bit_generator).
_INIT_A, _MULT_A = 0x43B0D7E5, 0x931E8875
_INIT_B, _MULT_B = 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R = 0xCA01F9DD, 0x4973F715
_POOL = 4


def _words(seed: int) -> list[int]:
    """A non-negative integer as little-endian 32-bit words (0 is one word)."""
    if seed < 0:
        raise ValueError("seed must be non-negative")
    words = [seed & _M32]
    seed >>= 32
    while seed:
        words.append(seed & _M32)
        seed >>= 32
    return words


def _pool(seed: int) -> list[int]:
    """SeedSequence(seed).pool: the entropy hashed into four mixed 32-bit words."""
    entropy = _words(seed)
    const = _INIT_A

    def hashmix(value: int) -> int:
        nonlocal const
        value ^= const
        const = (const * _MULT_A) & _M32
        value = (value * const) & _M32
        return value ^ (value >> 16)

    def mix(x: int, y: int) -> int:
        result = (_MIX_L * x - _MIX_R * y) & _M32
        return result ^ (result >> 16)

    pool = [hashmix(entropy[i] if i < len(entropy) else 0) for i in range(_POOL)]
    for src in range(_POOL):
        for dst in range(_POOL):
            if src != dst:
                pool[dst] = mix(pool[dst], hashmix(pool[src]))
    for word in entropy[_POOL:]:
        for dst in range(_POOL):
            pool[dst] = mix(pool[dst], hashmix(word))
    return pool


def _state_words(pool: list[int], n64: int) -> list[int]:
    """SeedSequence.generate_state(n64, uint64)."""
    const = _INIT_B
    out32 = []
    for i in range(2 * n64):
        value = pool[i % _POOL] ^ const
        const = (const * _MULT_B) & _M32
        value = (value * const) & _M32
        out32.append(value ^ (value >> 16))
    return [out32[2 * i] | (out32[2 * i + 1] << 32) for i in range(n64)]


def _draws32(seed: int) -> Iterator[int]:
    """PCG64(SeedSequence(seed))'s 32-bit draws: each 64-bit output gives its low half, then
    its high half."""
    s0, s1, i0, i1 = _state_words(_pool(seed), 4)
    inc = (((i0 << 64) | i1) << 1 | 1) & _M128
    state = inc  # srandom: state 0, one step, add the seed, one more step
    state = (state + ((s0 << 64) | s1)) & _M128
    state = (state * _PCG_MULT + inc) & _M128
    while True:
        state = (state * _PCG_MULT + inc) & _M128
        word = ((state >> 64) ^ state) & _M64
        rot = state >> 122
        out = ((word >> rot) | (word << (64 - rot))) & _M64
        yield out & _M32
        yield out >> 32


def permutation(n: int, seed: int) -> list[int]:
    """``numpy.random.default_rng(seed).permutation(n)`` as a list (n < 2**32)."""
    if n >= 1 << 32:
        raise ValueError("permutation size must be below 2**32")
    order = list(range(n))
    draws = _draws32(seed)
    for i in range(n - 1, 0, -1):
        mask = (1 << i.bit_length()) - 1
        j = next(draws) & mask
        while j > i:
            j = next(draws) & mask
        order[i], order[j] = order[j], order[i]
    return order
