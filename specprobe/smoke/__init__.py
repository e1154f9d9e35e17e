"""Measured acceptance: the reference backend (``runner``, ``reference``, ``eagle3``: transformers target +
EAGLE-3 drafter), a served engine's own counters (``counters``), an engine started from the user's launch
command and stopped again (``engine_process``, over ``launch``'s parse of that command), ``gate --smoke``
over a manifest's deployments (``deployment``), statistics, prompt sets, tables and plots.

It sits above the pipeline: a reference run checks the drafter first with ``pipeline.check``. The demo
models' trainer is ``specprobe.demo.train``."""
