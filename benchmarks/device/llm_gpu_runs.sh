#!/usr/bin/env bash
# One prepared run of the llm trainings on a lent GPU (the `device` tool), as docs/llm.md describes:
# three seeds of the shipped configuration (and seed 0 with --focus 4, and seed 0 at batch $BIGBATCH), leave-one-family-out
# and the learning curve (CURVE=0: not), all at once (several small models share one GPU better than one uses it), each
# fine-tuned for $T seconds; TARGET=ratio trains every model to write its ratio to the analytical prior (train llm --target).
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
BIGBATCH=${BIGBATCH:-128}
TARGET=${TARGET:-absolute}
CURVE=${CURVE:-1}
LOFO=${LOFO:-1}
SEEDS=${SEEDS:-0 1 2}  # seeds of the main runs; FOCUS=0 / BIGBATCH=0: no --focus 4 / large-batch run
FOCUS=${FOCUS:-1}
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
main() {  # main NAME SEED BATCH [more train options]
  "${LLM[@]}" train llm --data "$DATA" --out "$W/$1" --device "$DEVICE" --pretrain-steps "$PRE" --steps 1000000 \
    --batch "$3" --time-limit "$T" --seed "$2" --target "$TARGET" --save-every 2000 --no-progress "${@:4}" \
    > "$W/$1.log" 2>&1 &
}
for s in $SEEDS; do main main-s$s "$s" "$BATCH"; done
[ "$FOCUS" = 1 ] && main main-f4 0 "$BATCH" --focus 4
[ "$BIGBATCH" != 0 ] && main main-b$BIGBATCH 0 "$BIGBATCH"
[ "$LOFO" = 1 ] && "$PY" benchmarks/generalisation_curves.py lofo --data "$DATA" --kinds llm --device "$DEVICE" --jobs 7 \
  --llm-steps 1000000 --llm-pretrain "$PRE" --llm-batch "$BATCH" --llm-time-limit "$T" --eval-limit "$EVAL" \
  --llm-target "$TARGET" --work "$W/lofo" --out "$OUT/lofo.md" > "$W/lofo.log" 2>&1 &
if [ "$CURVE" = 1 ]; then
  "$PY" benchmarks/generalisation_curves.py curve --data "$DATA" --kinds llm --device "$DEVICE" --jobs 6 \
    --sizes "$SIZES" --llm-arch "$BIG" --llm-steps 1000000 --llm-pretrain "$PRE" --llm-batch "$BATCH" \
    --llm-time-limit "$T" --eval-limit "$EVAL" --llm-target "$TARGET" --work "$W/curve" --out "$OUT/curve.md" \
    > "$W/curve.log" 2>&1 &
fi
# a watchdog: whatever still runs at T + GRACE seconds is stopped, so the checkpoints saved so far still come back
( sleep $(( ${T%.*} + ${GRACE:-170} )); pkill -f "llmulator.cli import main"; pkill -f generalisation_curves;
  pkill -f multiprocessing.spawn ) 2>/dev/null &
dog=$!
wait $(jobs -p | grep -v "^$dog$")
kill $dog 2>/dev/null
echo "all runs done in $(( $(date +%s) - start )) s" | tee -a "$W/main-s0.log"
for m in $(cd "$W" && ls -d main-* | grep -v "\.log$"); do
  tar czf "$OUT/$m.tgz" -C "$W/$m" config.json generation_config.json model.safetensors tokenizer.json \
    tokenizer_config.json llmulator.json train_state.json predictions.jsonl 2>> "$W/$m.log"
done
cp /tmp/gpu.txt "$W/" 2>/dev/null
tar czf "$OUT/logs.tgz" -C "$W" $(cd "$W" && ls *.log *.txt 2>/dev/null)   # at most 8 files come back
