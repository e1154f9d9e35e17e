"""Per-rule fixtures: ``<RULE-ID>/fires`` must fire the rule, ``<RULE-ID>/passes`` (a near miss) must not."""
