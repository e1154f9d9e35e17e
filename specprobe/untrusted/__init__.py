"""The trust boundary: everything that comes from a user's files passes through here.

- ``files``: reading files and JSON from a user's folders within bounds (regular files only, size,
  nesting, integer width).
- ``text``: making the strings they hold (config values, file and tensor names, command lines) safe
  to show on a terminal, in a CI log or on a rendered page.

The package itself imports nothing, so that showing text (``--help`` included) does not load the
file readers.
"""
