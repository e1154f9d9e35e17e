#!/usr/bin/env bash
# Start vLLM with the EAGLE-3 drafter. Paths are relative to this script's folder.
set -euo pipefail
TARGET=../demo/target
DRAFT=${DRAFT:-../demo/draft}

exec vllm serve "$TARGET" \
  --port 8000 \
  --speculative-config "{\"method\": \"eagle3\", \"model\": \"$DRAFT\", \"num_speculative_tokens\": 3}"
