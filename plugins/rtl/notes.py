"""The rtl profile's notes where the generated hardware differs from the spec by design: what an architect reading
rtl's cycles next to hlsim's needs to know to tell a modelling gap from a bug."""

from __future__ import annotations

from llmulator import nest
from llmulator.design import Design


def drain_note(d: Design, plan) -> list[str]:
    """Where the spec's PE registers hold a second accumulator, hlsim overlaps an os fold's drain with the
    next fold; the generated PE holds one, so the rtl's cycles are higher by design: say so."""
    o = plan.operands
    if plan.shape == "os" and nest.shadow_accumulator_fits(d, o["O"].bits, o["X"].bits + o["Y"].bits):
        return [f"the generated PE holds one accumulator, so each fold's results shift out ({plan.A} cycles) "
                "before the next fold accumulates; the spec's PE registers have room for a second (or it states "
                "none), so hlsim and the analytical model overlap that drain with the next fold (every fold's but "
                f"the last: rtl counts {plan.A} cycles more per fold but the last)"]
    return []


def mac_latency_note(d: Design) -> list[str]:
    """The generated PE multiplies and accumulates in one cycle whatever the spec's ``mac`` latency; hlsim
    and the analytical model pay the spec's latency (beyond one cycle, once per nest): say so where they differ
    (an outside user's 4-cycle MAC: hlsim 19 cycles, rtl 16, and nothing said why)."""
    mac = d.arch.operators.get("mac")
    if mac is None or mac.latency_cycles <= 1:
        return []
    return [f"the generated PE's MAC takes 1 cycle, not the spec's {mac.latency_cycles}: hlsim and the analytical "
            f"model pay the other {mac.latency_cycles - 1} once per nest (a pipelined MAC would also lengthen every "
            "hop of the skew, which neither models)"]


def latency_note(d: Design, lay) -> list[str]:
    """A buffer level stated at 0 cycles' latency is generated with a registered read (1 cycle), and hlsim's bank
    model replays the same hardware: say so, or the spec's 0 is silently not what ran (an outside probe: 86 cycles
    where a 0-cycle read gives 85)."""
    return [f"level {name}: latency_cycles 0 is generated as 1 (each bank registers its read); hlsim's bank model "
            "replays the same 1" for name in lay.levels if d.arch.level(name).latency_cycles < 1]
