"""Probe scripts run as ``python -I <script>`` inside an engine's own interpreter (stdlib + engine only).

A package only so that wheels ship the scripts; nothing here is imported by specprobe itself.
"""
