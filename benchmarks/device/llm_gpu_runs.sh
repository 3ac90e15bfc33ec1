#!/usr/bin/env bash
# One prepared run of the llm trainings on a lent GPU (the `device` tool), as docs/llm.md describes:
# three seeds of the shipped configuration (and seed 0 with --focus 4), leave-one-family-out and the learning curve, all at once
# (several small models share one GPU better than one uses it), each fine-tuned for $T seconds.
#
# Prepared here (CPU):
#   .venv/bin/python benchmarks/device/slim_dataset.py data/synth-v3 .carry/synth-v3-slim
#   tar cJf .carry/data.tar.xz -C .carry synth-v3-slim
#   .venv/bin/pip wheel -q --no-deps --no-build-isolation -w .whl .   # + the wheels the GPU image lacks
# Run there with carry [".whl", ".carry/data.tar.xz"]:   bash benchmarks/device/llm_gpu_runs.sh
# Locally (a smoke test on the CPU): DEVICE=cpu T=5 OUT=/tmp/o DATA=/tmp/tiny-slim bash benchmarks/device/llm_gpu_runs.sh
set -u
DEVICE=${DEVICE:-cuda}
T=${T:-300}            # seconds of training per run
BATCH=${BATCH:-32}
PRE=${PRE:-300}        # pretraining steps of each trunk
EVAL=${EVAL:-500}      # held-out rows scored per split (lofo, curve)
SIZES=${SIZES:-2000,8000,0}
BIG=${BIG:-'{"hidden_size": 320, "intermediate_size": 864, "num_hidden_layers": 4, "num_attention_heads": 5, "num_key_value_heads": 5}'}
W=${W:-/tmp/llm-runs}
export PYTHONUNBUFFERED=1
if [ -z "${DATA:-}" ]; then  # on the device machine: install what its image lacks, unpack the data
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
  mkdir -p /tmp/data && tar xJf .carry/data.tar.xz -C /tmp/data || exit 1
  DATA=$(ls -d /tmp/data/*/ | head -1)
  nvidia-smi --query-gpu=name,memory.total --format=csv > /tmp/gpu.txt 2>&1
fi
PY=${PY:-python3}
LLM=("$PY" -c 'import sys; from llmulator.cli import main; sys.exit(main())')
mkdir -p "$W" "$OUT"
start=$(date +%s)
for s in 0 1 2; do
  "${LLM[@]}" train llm --data "$DATA" --out "$W/main-s$s" --device "$DEVICE" --pretrain-steps "$PRE" --steps 1000000 \
    --batch "$BATCH" --time-limit "$T" --seed "$s" --save-every 2000 --no-progress > "$W/main-s$s.log" 2>&1 &
done
"${LLM[@]}" train llm --data "$DATA" --out "$W/main-f4" --device "$DEVICE" --pretrain-steps "$PRE" --steps 1000000 \
  --batch "$BATCH" --time-limit "$T" --seed 0 --focus 4 --save-every 2000 --no-progress > "$W/main-f4.log" 2>&1 &
"$PY" benchmarks/generalisation_curves.py lofo --data "$DATA" --kinds llm --device "$DEVICE" --jobs 7 \
  --llm-steps 1000000 --llm-pretrain "$PRE" --llm-batch "$BATCH" --llm-time-limit "$T" --eval-limit "$EVAL" \
  --work "$W/lofo" --out "$OUT/lofo.md" > "$W/lofo.log" 2>&1 &
"$PY" benchmarks/generalisation_curves.py curve --data "$DATA" --kinds llm --device "$DEVICE" --jobs 6 \
  --sizes "$SIZES" --llm-arch "$BIG" --llm-steps 1000000 --llm-pretrain "$PRE" --llm-batch "$BATCH" \
  --llm-time-limit "$T" --eval-limit "$EVAL" --work "$W/curve" --out "$OUT/curve.md" > "$W/curve.log" 2>&1 &
# a watchdog: whatever still runs at T + GRACE seconds is stopped, so the checkpoints saved so far still come back
( sleep $(( ${T%.*} + ${GRACE:-170} )); pkill -f "llmulator.cli import main"; pkill -f generalisation_curves;
  pkill -f multiprocessing.spawn ) 2>/dev/null &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
echo "all runs done in $(( $(date +%s) - start )) s" | tee -a "$W/main-s0.log"
for m in main-s0 main-s1 main-s2 main-f4; do
  tar czf "$OUT/$m.tgz" -C "$W/$m" config.json generation_config.json model.safetensors tokenizer.json \
    tokenizer_config.json llmulator.json train_state.json predictions.jsonl 2>> "$W/$m.log"
done
cp /tmp/gpu.txt "$W/" 2>/dev/null
tar czf "$OUT/logs.tgz" -C "$W" $(cd "$W" && ls *.log *.txt 2>/dev/null)   # at most 8 files come back
