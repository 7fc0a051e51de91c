"""The plugin's one error type."""


class CrdApiServerError(RuntimeError):
    """The server could not be found, started, reset or stopped cleanly."""
