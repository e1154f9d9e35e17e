"""specprobe's test suite: one package, imported as ``tests.<folder>.<module>`` everywhere."""
