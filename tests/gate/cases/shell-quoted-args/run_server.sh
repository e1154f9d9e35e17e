#!/bin/bash
model_path=meta-llama/Llama-3.1-8B-Instruct
args=" --model-path $model_path --tp-size=1 --port 30000"
args="$args --speculative-algorithm EAGLE3 --speculative-draft-model-path jamesliu1/sglang-EAGLE3-Llama-3.1-Instruct-8B"

python3 -m sglang.launch_server "$args"
