#!/bin/sh
# Broken: SGLang has no EAGLE4 algorithm.
python3 -m sglang.launch_server --model-path ../demo/target \
    --speculative-algorithm EAGLE4 \
    --speculative-draft-model-path ../demo/draft
