"""Measured acceptance: the reference backend (transformers target + EAGLE-3 drafter), the server backend
(a deployed engine's own counters), statistics, prompt sets, plots and the demo models' training."""
