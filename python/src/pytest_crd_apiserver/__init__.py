"""pytest fixtures running crd-apiserver, a kube-apiserver for tests: `crd_apiserver`
(one server per session), `crd_apiserver_clean` (that server reset for each test) and
`crd_apiserver_restored` (that server put back to the session's snapshot after each
test)."""

from .error import CrdApiServerError
from .server import BIN_ENV, CrdApiServer, CrdApiServerFork, Restored, find_binary

__all__ = [
    "BIN_ENV",
    "CrdApiServer",
    "CrdApiServerError",
    "CrdApiServerFork",
    "Restored",
    "find_binary",
]
