"""The one pipeline behind `check`, `lint` and `gate`, top to bottom (each module imports only those
listed after it, and the rule families, parsers and engine facts below the package):

- ``exact``: exact mode (``--exact``), a deployment's drafter through its vLLM release's own code.
- ``dryrun``: ``lint --dry-run``, a serve command through the engine's own configuration code.
- ``gate``: every deployment of the given files examined (``gate``); ``lint_command`` is the same
  examination of the one deployment a serve command's argv builds (``lint``).
- ``lint``: the engine-settings rules of one deployment (the speculative settings against the engine
  release's snapshot, the compatibility matrix).
- ``check``: the drafter-folder rules (``check``), also run by the gate for each local drafter.

The package itself imports nothing, so a command loads only the stages it runs.
"""
