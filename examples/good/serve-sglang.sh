#!/bin/sh
# Start SGLang with the EAGLE-3 drafter; SGLang picks the step/top-k/token counts itself.
HF_HUB_OFFLINE=1 python3 -m sglang.launch_server \
    --model-path ../demo/target \
    --speculative-algorithm EAGLE3 \
    --speculative-draft-model-path ../demo/draft \
    --port 30000 2>&1 | tee sglang.log
