"""Tests of `specprobe check`: corpus, reader/writer, rules, CLI, hub cache, robustness."""
