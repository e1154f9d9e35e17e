#!/usr/bin/env bash
# EAGLE-3 on vLLM, the command built as an array (one flag per line, comments between).
set -euo pipefail

MODEL="${MODEL:-meta-llama/Llama-3.1-8B-Instruct}"
SPEC='{"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 0}'

VLLM_CMD=(
  vllm serve "$MODEL"
  --tensor-parallel-size 1
  # the drafter
  --speculative-config "$SPEC"
)
VLLM_CMD+=(--port 8000)

exec "${VLLM_CMD[@]}"
