"""dse's top-K of distinct predictions: the points `--verify K` profiles."""

import numpy as np
from llmulator_plugins.dse.run import top_distinct


def _res(cycles):
    n = len(cycles)
    return {"cycles": np.array(cycles, float), "energy_pj": np.ones(n), "area_um2": np.ones(n)}


def test_verify_zero_selects_no_point():
    """`--verify 0` verified every point: the stop test `len(out) == k` never held for k = 0."""
    assert top_distinct(_res([1, 2, 3]), np.array([0, 1, 2]), 0) == []


def test_copies_of_one_prediction_count_once_and_order_is_kept():
    res = _res([5, 5, 7, 9])
    assert top_distinct(res, np.array([0, 1, 2, 3]), 2) == [0, 2]
    assert top_distinct(res, np.array([3, 2, 1, 0]), 10) == [3, 2, 1]
