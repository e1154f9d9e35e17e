#!/usr/bin/env bash
# Serve Llama 3.1 8B with an EAGLE-3 head on one GPU.
set -euo pipefail

MODEL="meta-llama/Llama-3.1-8B-Instruct"
DRAFT="${DRAFT:-yuhuili/EAGLE3-LLaMA3.1-Instruct-8B}"
PORT=8000

docker run --runtime nvidia --gpus all \
    -v ~/.cache/huggingface:/root/.cache/huggingface \
    --env "HUGGING_FACE_HUB_TOKEN=${HF_TOKEN}" \
    -p ${PORT}:8000 \
    --ipc=host \
    vllm/vllm-openai:v0.33.0 \
    --model "$MODEL" \
    --speculative-config "{\"method\": \"eagle3\", \"model\": \"$DRAFT\", \"num_speculative_tokens\": 3, \"nmu_speculative_tokens\": 2}"
