from projects.errors import NovelsiteError


class TreeError(NovelsiteError):
    """A file of the tree is unsafe, unreadable or invalid; nothing was imported."""

    code = "invalid_tree"
    http_status = 400

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}", extra={"path": path, "reason": reason})
        self.path = path
        self.reason = reason
