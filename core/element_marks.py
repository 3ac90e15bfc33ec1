"""The distinct elements a run reads and writes of each workload array: what a physical bound needs.

Why a module of its own: every word of an ``in`` array that the kernel reads before writing it must come from
the backing store at least once, and every element of an ``out`` array it writes must go back at least once,
whatever tiles, reuse and forwarding the model assumes. hlsim's transfers are a model (boxes per tile, mean
trips); a run that moved fewer words than the distinct elements it touched is a bug in that model, and until
hlsim 0.57 such bugs were found only by outside probes (`a[3 - k] + a[k + 3]` read 7 elements and moved 4).
The instrumented program marks each element as it is read or written (one byte per element of each array the
harness allocates: bit 1 read before any write, bit 2 written) and reports the counts; ``plugins/hlsim/bounds``
checks the backing store's words against them on every run.
"""

from __future__ import annotations

READ, WRITE, BOTH = 1, 2, 3  # how an access uses its element (a compound assignment reads, then writes)
KINDS = {"read": READ, "write": WRITE, "read-modify-write": BOTH}


def declarations(n_arrays: int) -> list[str]:
    """The marks' state and the marking function, before the kernel."""
    n = max(1, n_arrays)
    return [f"#define __NMARKED {n}",
            "static unsigned char *__seen[__NMARKED]; static char *__mbase[__NMARKED];",
            "static size_t __msize[__NMARKED], __mcount[__NMARKED];",
            "static unsigned long long __mread[__NMARKED], __mwritten[__NMARKED];",
            "/* an element's first read before any write, and its first write, each counted once; not inlined: */",
            "/* its body at every access doubled the compile time (0.13 -> 0.26 s a kernel), not the run's */",
            "__attribute__((noinline)) static void *__mk(int __a, int __k, void *__p) {",
            "  size_t __i = (size_t)((char *)__p - __mbase[__a]) / __msize[__a];",
            "  if (__i >= __mcount[__a]) return __p;",
            "  unsigned char __m = __seen[__a][__i];",
            f"  if ((__k & {READ}) && !__m) {{ __mread[__a]++; __m |= {READ}; }}",
            f"  if ((__k & {WRITE}) && !(__m & {WRITE})) {{ __mwritten[__a]++; __m |= {WRITE}; }}",
            "  __seen[__a][__i] = __m; return __p;", "}",
            "#define __MK(a, k, p) ((__typeof__(p))__mk(a, k, (void *)(p)))"]


def access(aid: int, kind: str, text: str) -> str:
    """An element access ``text`` (an lvalue) that also marks its element."""
    return f"(*__MK({aid}, {KINDS.get(kind, BOTH)}, &({text})))"


def setup(aid: int, name: str, ctype: str, count: int) -> list[str]:
    """Lines of ``main`` after the array's allocation: where its elements lie, and its marks."""
    return [f"  __mbase[{aid}] = (char *){name}; __msize[{aid}] = sizeof({ctype}); __mcount[{aid}] = {count}u;",
            f"  __seen[{aid}] = (unsigned char *)__alloc({count}u);"]


def report(n_arrays: int) -> list[str]:
    """The counters file's lines: ``marks ARRAY READ WRITTEN``."""
    return [f"  for (int __a = 0; __a < {n_arrays}; __a++) fprintf(__cf, \"marks %d %llu %llu\\n\", __a, "
            "__mread[__a], __mwritten[__a]);"] if n_arrays else []
