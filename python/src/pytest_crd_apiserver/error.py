"""The plugin's one error type."""


class CrdApiServerError(RuntimeError):
    """The server could not be found, started, reset or stopped cleanly, or a snapshot
    could not be taken, restored or forked (the server's Status message says why)."""
