"""A worker's database connection after an error. A stage can wait minutes for the LLM with its
connection idle; a server restart, a failover or a proxy's idle timeout may cut it meanwhile, and
Django keeps failing on a dead connection until something closes it (``close_old_connections`` at
the next task's start). The stage's own error handling closes it as soon as it sees it dead."""
from __future__ import annotations

from django.db import connection


def connection_drop_if_broken() -> bool:
    """Close the default connection if it no longer answers, so that the next query opens a new one;
    True if it was closed. Never inside a transaction (an eager stage in a caller's transaction): the
    caller owns it, and a new connection would not see its rows."""
    if connection.connection is None or connection.in_atomic_block or connection.is_usable():
        return False
    connection.close()
    return True
