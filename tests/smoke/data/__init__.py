"""Test data of the smoke tests: a speculators preprocessed dataset written by datasets itself, and its writer."""
