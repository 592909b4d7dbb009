"""The generator of kplab/stats.h replayed in Python (splitmix64-seeded xoshiro256**, 32-bit halves
of each 64-bit draw, Lemire's bounded draw), for the reference scripts that replay kplab's bootstrap
draws (gen_ci.py, gen_meta_eval.py, gen_stats.py)."""

M64 = (1 << 64) - 1
M32 = (1 << 32) - 1


def rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & M64


class Rng:
    def __init__(self, seed):
        st = seed & M64
        self.s = []
        for _ in range(4):
            st = (st + 0x9E3779B97F4A7C15) & M64
            z = st
            z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
            z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
            self.s.append(z ^ (z >> 31))
        self.spare = None

    def next64(self):
        s = self.s
        result = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return result

    def next32(self):
        if self.spare is not None:
            v, self.spare = self.spare, None
            return v
        v = self.next64()
        self.spare = v >> 32
        return v & M32

    def below(self, n):
        m = self.next32() * n
        low = m & M32
        if low < n:
            t = ((1 << 32) - n) % n
            while low < t:
                m = self.next32() * n
                low = m & M32
        return m >> 32
