"""The one base class of bad-input errors: the CLI prints their message as one line and exits 2.

Each layer keeps its own error type (``GridError``, ``BudgetError``, ``DataError``…) and also
derives from :class:`UsageError`, so the command line can catch them all without importing the
modules that define them (``python -m bench list`` must stay light)."""


class UsageError(Exception):
    """Input the user can fix: the message says what is wrong and how to fix it."""
