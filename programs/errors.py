"""User-facing exceptions for text2sql-dspy.

Every error meant to be shown to a user (bad configuration, missing model
files, ...) subclasses :class:`Text2SQLError`, so a CLI can catch that one
base class and print ``str(exc)`` without a traceback. Messages always name
the fix (the env var to set, the package to install, ...).
"""

from __future__ import annotations

__all__ = [
    "Text2SQLError",
    "ConfigurationError",
    "ModelFilesError",
    "DatabaseError",
    "SchemaFileError",
    "QuestionError",
    "ExampleError",
]


class Text2SQLError(Exception):
    """Base class of all user-facing text2sql-dspy errors."""


class ConfigurationError(Text2SQLError):
    """Invalid or incomplete configuration (model string, API key, env var)."""


class ModelFilesError(Text2SQLError):
    """The embedded model cannot be assembled (missing part package, bad digest)."""


class DatabaseError(Text2SQLError):
    """A database file is missing, unreadable or not a database."""


class SchemaFileError(Text2SQLError):
    """A schema file is malformed or disagrees with its database."""


class QuestionError(Text2SQLError):
    """The question is empty or unusable."""


class ExampleError(Text2SQLError):
    """A question -> SQL pair or a note the example store refused, or a store it cannot use."""
