"""specprobe: checks a speculative-decoding deployment (drafter, target, engine) before a GPU is spent."""

__version__ = "0.1.0"
