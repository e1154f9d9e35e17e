"""specprobe's own example models, apart from the code that checks a user's deployment.

- ``example``: the built-in example behind ``specprobe demo`` (a valid and a broken EAGLE-3 drafter,
  checked side by side, measured when the smoke extra is installed).
- ``fixtures``: builders of drafter and target checkpoints in every supported format (the demo, the
  test corpora, the benchmarks and the fix proofs write real on-disk layouts with them).
- ``train``: trains the small real target and drafter (``python -m specprobe.demo.train``).

Nothing under ``specprobe.pipeline`` or below imports this package.
"""
