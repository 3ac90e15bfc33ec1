"""Run ZigZag on one layer; executed by .venv-zigzag/bin/python, never by the main environment.

Usage: zigzag_runner.py FOLDER [latency|energy|EDP]
FOLDER holds accelerator.yaml, workload.yaml and mapping.yaml (written by
benchmarks/peers/zigzag_inputs.py). Prints one JSON object on the last line of
stdout: latency (cycles, ZigZag's latency_total2), energy_pj, the latency terms
(ideal, ideal temporal, stall/slack, on/off-loading, systolic drain), MAC and
memory energy, the chosen spatial and temporal mapping, and the seconds spent
in the API call and in ``import zigzag.api``.
"""

import json
import logging
import sys
import time

t0 = time.perf_counter()
from zigzag import api  # noqa: E402

t_import = time.perf_counter() - t0


def main() -> int:
    folder = sys.argv[1]
    opt = sys.argv[2] if len(sys.argv) > 2 else "latency"
    logging.disable(logging.CRITICAL)  # ZigZag logs INFO per stage; the JSON line is the answer
    t1 = time.perf_counter()
    energy, latency, cmes = api.get_hardware_performance_zigzag(
        workload=f"{folder}/workload.yaml", accelerator=f"{folder}/accelerator.yaml",
        mapping=f"{folder}/mapping.yaml", opt=opt, dump_folder=f"{folder}/out", loma_show_progress_bar=False)
    t_api = time.perf_counter() - t1
    cme = cmes[0][1][0][0] if isinstance(cmes[0][1], list) and cmes[0][1] and isinstance(cmes[0][1][0], tuple) \
        else cmes[0][0]
    out = {
        "latency_cycles": float(latency), "energy_pj": float(energy),
        "ideal_cycle": float(getattr(cme, "ideal_cycle", float("nan"))),
        "ideal_temporal_cycle": float(getattr(cme, "ideal_temporal_cycle", float("nan"))),
        "stall_slack_comb": float(getattr(cme, "stall_slack_comb", float("nan"))),
        "data_onloading_cycle": float(getattr(cme, "data_onloading_cycle", float("nan"))),
        "data_offloading_cycle": float(getattr(cme, "data_offloading_cycle", float("nan"))),
        "systolic_drain_cycle": float(getattr(cme, "systolic_drain_cycle", 0.0)),
        "mac_energy_pj": float(getattr(cme, "mac_energy", float("nan"))),
        "mem_energy_pj": float(getattr(cme, "mem_energy", float("nan"))),
        "spatial_mapping": str(getattr(cme.layer, "spatial_mapping", "")),
        "temporal_mapping": str(getattr(getattr(cme, "mapping", None), "temporal_mapping", ""))[:400],
        "api_seconds": t_api, "import_seconds": t_import,
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
