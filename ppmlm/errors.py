"""Errors users see. Each names the record and the field so a data team can fix its file."""


class PPMLMError(Exception):
    """Base class: caught by the command line and printed as one line, without a traceback."""


class CorpusError(PPMLMError, ValueError):
    """A corpus that cannot be used as given (missing file, missing column, bad record)."""


class BlacklistError(PPMLMError, ValueError):
    """A blacklist artifact that is missing, incomplete or built with other parameters."""


class ConfigError(PPMLMError, ValueError):
    """A configuration key whose value cannot be honoured: the message names the key, the value and what is allowed."""


class RunInUseError(ConfigError):
    """An output_dir locked by another training, which the message names (process id, host, start time)."""
