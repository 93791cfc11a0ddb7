#!/usr/bin/env bash
# Stop 53's suite call: the whole memory-bound suite (#15) at HEAD, in two
# halves (each within the device tool's 600 s a command; the copy ceiling
# is measured again by each):
#   PART=1 bash bench/stop53-gpu.sh   rows from residual_layer_norm to head_transpose_scale
#   PART=2 bash bench/stop53-gpu.sh   rows from matrix_transpose to softmax_backward
# Needs .device/ from
#   FUSEC_GPU_TOOLS="fusec-run fusec-jit-tsan-tests" bash bench/stage-gpu.sh
set -uo pipefail
cd "$(dirname "$0")/.."
source bench/gpu-env.sh
case ${PART:-1} in
1) rows=residual_layer_norm,rms_norm_residual,softmax_f32,logsumexp,masked_softmax,cross_entropy,column_sum,batch_norm_stats,batch_norm_stats_nhwc,mean_pool,head_split,head_merge,head_transpose_scale ;;
*) rows=matrix_transpose,swiglu_packed,geglu_packed,kv_cache_concat,cast_bf16_scaled,cast_fp8_scaled,row_quant_fp8,embedding_gather,tanh_gelu_f16,gelu_bias_residual,rope,adam_step,softmax_backward ;;
esac
SUITE_ONLY=$rows timeout 540 python3 bench/memory_bound_suite.py > "$OUT/suite.log" 2>&1
echo "suite rc=$? ($(el))"
sed -n '/^copy ceiling/,$p' "$OUT/suite.log"
