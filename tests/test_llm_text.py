"""What the LLM estimator reads: digit-isolating tokenizer, prompt and target text."""

from __future__ import annotations

from pathlib import Path

from llmulator.design import load_design
from llmulator_plugins.llm import codec, text

ROOT = Path(__file__).resolve().parent.parent


def _design():
    return load_design(ROOT / "arch_specs/systolic-16x16.yaml", ROOT / "workloads/gemm.yaml",
                       ROOT / "mappings/gemm-ws-16x16.yaml")


def test_tokenizer_isolates_digits_and_round_trips_through_save(tmp_path):
    d = _design()
    p = text.model_prompt(d)
    assert "#pragma" not in p and p.endswith("### predict\n")
    tok = text.build_tokenizer([p, "L_k2", text.target_text({"cycles": 2604, "energy_pj": 7.6e6,
                                                             "power_mw": 2915, "area_um2": 1.26e6})])
    ids = tok("M = 6 4 ; K=128 L_k2")["input_ids"]
    toks = tok.convert_ids_to_tokens(ids)
    assert toks[:4] == ["M", "=", "6", "4"]
    assert toks[-4:] == ["1", "2", "8", "L_k2"]  # digits one by one, identifiers whole
    assert all(len(t) == 1 for t in toks if t.isdigit())
    tok.save_pretrained(tmp_path)
    back = text.load_tokenizer(tmp_path)
    assert back("M = 6 4")["input_ids"] == tok("M = 6 4")["input_ids"]
    # every special token (markers, digits, signs) has its own id
    for s in text.SPECIALS + text.NUMBER_SYMBOLS:
        assert s == "<unk>" or back.convert_tokens_to_ids(s) != back.unk_token_id
    assert back.convert_ids_to_tokens(back("energy e")["input_ids"])[-1] == "e"


def test_target_text_is_markers_and_codec_tokens():
    t = text.target_text({"cycles": 12345, "energy_pj": 0.5, "power_mw": 1e-3, "area_um2": 7})
    assert t.split()[:7] == ["<cycles>", "+", "0", "4", "1", "2", "3"]
    assert t.endswith("<eos>") and len(t.split()) == 4 * (1 + codec.LENGTH) + 1


def test_the_compact_prompt_lists_used_operators_and_shortens_loop_headers():
    d = _design()
    p = text.model_prompt(d)
    assert "op mac" in p and "op add" not in p  # the gemm statement runs on the PE array's MACs only
    assert "for (int" not in p and "L_m: for m 0 until M {" in p.replace("6 4", "64")
    assert "### facts" not in p


def test_hints_add_trip_counts_and_the_analytical_prior():
    d = _design()
    static = text.model_prompt(d, hints="static")
    assert "### facts" in static and "trips L_k 6 4" in static and "static cycles" not in static
    full = text.model_prompt(d, hints="analytical")
    from llmulator_plugins.analytical.estimator import AnalyticalEstimator
    cycles = AnalyticalEstimator().estimate([d])[0].metrics["cycles"]
    assert f"static cycles {' '.join(codec.encode(cycles))}" in full


def test_unknown_hints_are_refused():
    import pytest
    with pytest.raises(ValueError):
        text.model_prompt(_design(), hints="oracle")


def test_a_design_s_input_variant_reaches_the_prompt_and_the_expected_trips():
    from llmulator.errors import UserError
    base = load_design(ROOT / "arch_specs/hls-fpga.yaml", ROOT / "workloads/spmv-csr.yaml",
                       ROOT / "mappings/spmv-csr-hls-fpga.yaml")
    skewed = load_design(ROOT / "arch_specs/hls-fpga.yaml", ROOT / "workloads/spmv-csr.yaml",
                         ROOT / "mappings/spmv-csr-hls-fpga.yaml", variant="skewed")
    p0, p1 = text.model_prompt(base, hints="static"), text.model_prompt(skewed, hints="static")
    assert "variant skewed" in p1 and "variant" not in p0
    assert p0 != p1
    import pytest
    with pytest.raises(UserError, match="no input variant"):
        load_design(ROOT / "arch_specs/hls-fpga.yaml", ROOT / "workloads/spmv-csr.yaml",
                    ROOT / "mappings/spmv-csr-hls-fpga.yaml", variant="nope")
