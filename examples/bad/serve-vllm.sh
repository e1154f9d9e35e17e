#!/usr/bin/env bash
# Broken: num_speculative_tokens must be > 0.
set -euo pipefail
TARGET=../demo/target
exec vllm serve "$TARGET" \
  --speculative-config '{"method": "eagle3", "model": "../demo/draft", "num_speculative_tokens": 0}'
