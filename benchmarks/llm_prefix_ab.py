"""A/B of the llm prefix cache (plugins/llm/prefix.py): the library designs of one architecture queried one
after another with the cache off and on, in interleaved rounds, on the lean backend.

Run:  .venv/bin/python benchmarks/llm_prefix_ab.py [--arch systolic-16x16] [--rounds 3] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", default="systolic-16x16")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    import torch
    from llmulator import library
    from llmulator.design import load_design
    from llmulator_plugins.llm import decode, lean
    from llmulator_plugins.llm.estimator import DEFAULT_MODEL, LLMEstimator
    from llmulator_plugins.llm.prefix import PrefixCache
    torch.set_num_threads(a.threads)
    designs = [load_design(library.resolve("architecture", m["architecture"]),
                           library.resolve("workload", m["workload"]), m["path"])
               for m in library.entries("mapping") if m.get("architecture") == a.arch and "workload" in m]
    est = LLMEstimator(DEFAULT_MODEL)
    est.meta = est._meta()
    prompts = est.prompts(designs)
    model, tok = lean.LeanLlama(DEFAULT_MODEL), lean.LeanTokenizer(DEFAULT_MODEL)
    times: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(a.rounds):
        for mode in ("off", "on"):
            model._prefixes = PrefixCache(size=0) if mode == "off" else PrefixCache()
            for p in prompts:
                t0 = time.perf_counter()
                decode.decode_batch(model, tok, [p])
                times[mode].append((time.perf_counter() - t0) * 1e3)
    pc = model._prefixes
    print(f"{len(prompts)} prompts of {a.arch}, {a.threads} thread(s), load {os.getloadavg()[0]:.1f}: median query "
          f"{statistics.median(times['off']):.1f} ms cache off, {statistics.median(times['on']):.1f} ms on; "
          f"{pc.reused_tokens} of {pc.reused_tokens + pc.prefilled_tokens} prompt tokens from the cache "
          f"({pc.hits} hits, last round)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
