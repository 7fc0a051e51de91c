"""pytest fixtures running crd-apiserver, a kube-apiserver for tests: `crd_apiserver`
(one server per session) and `crd_apiserver_clean` (that server reset for each test)."""

from .error import CrdApiServerError
from .server import BIN_ENV, CrdApiServer, find_binary

__all__ = ["BIN_ENV", "CrdApiServer", "CrdApiServerError", "find_binary"]
