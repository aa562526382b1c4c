#!/usr/bin/env python3
"""Container health check for the web role: GET http://127.0.0.1:8000/healthz must answer 200.

With DEBUG=0 Django refuses a request whose Host header is not in ALLOWED_HOSTS (400
DisallowedHost), and "127.0.0.1" usually is not. So the request names the first concrete entry of
ALLOWED_HOSTS as its Host, while still connecting to the loopback address.
Standard library only: the slim image has no curl.
"""
import os
import sys
import urllib.error
import urllib.request

URL = "http://127.0.0.1:{port}/healthz".format(port=os.environ.get("HEALTHCHECK_PORT", "8000"))


def host_header() -> str:
    for entry in os.environ.get("ALLOWED_HOSTS", "").split(","):
        entry = entry.strip()
        if not entry or entry == "*":
            continue
        # ".example.com" is Django's subdomain wildcard and also matches "example.com" itself.
        return entry[1:] if entry.startswith(".") else entry
    return "localhost"


def main() -> int:
    request = urllib.request.Request(URL, headers={"Host": host_header()})
    try:
        with urllib.request.urlopen(request, timeout=8) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except OSError as exc:  # refused, timed out, reset
        print(f"healthcheck: {URL}: {exc}", file=sys.stderr)
        return 1
    if status != 200:
        print(f"healthcheck: {URL}: HTTP {status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
