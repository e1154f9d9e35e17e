"""Probe scripts run as ``python -I <script>`` inside an engine's own interpreter (stdlib + engine only):
the schema probes (``*_probe.py``), the dry runs of ``lint --dry-run`` (``*_dry_run.py``) and exact mode
(``vllm_exact.py``), with their shared helpers (``_common.py``, ``_errors.py``).

A package only so that wheels ship the scripts; nothing here is imported by specprobe itself.
"""
