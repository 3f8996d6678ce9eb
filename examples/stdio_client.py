#!/usr/bin/env python3
"""A host driving a splashc session over `splashc serve --stdio`.

Launches the demo policy (policies/demo.splashpol; `scripts/demo` installs
the probe it runs), makes two `probe.echo` calls, starts a `probe.sleep`
and cancels it, then closes the session. Any event other than the one
expected next is an error: the client stops `splashc` and exits 1.

Only Python's standard library is used. Run it from the repository root:

    python3 examples/stdio_client.py [--splashc PATH] [--policy PATH]

Without `--splashc` it uses the release build under target/, then the debug
build, then `splashc` on PATH.
"""

import argparse
import json
import os
import queue
import secrets
import shutil
import subprocess
import sys
import threading

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATIENCE = 30.0  # seconds any one event may take


def find_splashc():
    target = os.path.join(ROOT, "target")
    for sub in ("release", "debug"):
        for triple in sorted(os.listdir(target)) if os.path.isdir(target) else []:
            path = os.path.join(target, triple, sub, "splashc")
            if os.access(path, os.X_OK):
                return path
        path = os.path.join(target, sub, "splashc")
        if os.access(path, os.X_OK):
            return path
    return shutil.which("splashc")


class Unexpected(Exception):
    pass


class Client:
    def __init__(self, splashc):
        self.proc = subprocess.Popen(
            [splashc, "serve", "--stdio"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.events = queue.Queue()
        reader = threading.Thread(target=self._read, daemon=True)
        reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.events.put(json.loads(line))
        self.events.put(None)

    def send(self, **request):
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()

    def expect(self, kind, session, **fields):
        """The next event: it must be `kind` for `session` with `fields`."""
        try:
            event = self.events.get(timeout=PATIENCE)
        except queue.Empty:
            raise Unexpected(f"no `{kind}` event within {PATIENCE} s")
        if event is None:
            raise Unexpected(f"splashc serve ended while `{kind}` was expected")
        if event.get("event") != kind or event.get("session") != session:
            raise Unexpected(f"expected `{kind}` for `{session}`, got {event}")
        for key, want in fields.items():
            if event.get(key) != want:
                raise Unexpected(f"`{kind}` has {key} = {event.get(key)!r}, not {want!r}: {event}")
        return event

    def finish(self):
        """Ends the control stream; splashc stops anything left and exits."""
        self.proc.stdin.close()
        rest = []
        while True:
            event = self.events.get(timeout=PATIENCE)
            if event is None:
                break
            rest.append(event)
        return self.proc.wait(timeout=PATIENCE), rest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splashc", default=None)
    parser.add_argument(
        "--policy", default=os.path.join(ROOT, "policies", "demo.splashpol")
    )
    args = parser.parse_args()
    splashc = args.splashc or find_splashc()
    if not splashc:
        print("stdio_client: no splashc found; build it or pass --splashc", file=sys.stderr)
        return 2

    grant = lambda tool: {  # noqa: E731
        "tool": tool,
        "format": "json",
        "max_calls": 2,
        "max_input_bytes": 4096,
        "max_output_bytes": 65536,
    }
    manifest = {
        "protocol_version": 5,
        "session_id": "client-" + secrets.token_hex(8),
        "grants": [grant("probe.echo"), grant("probe.sleep")],
    }

    client = Client(splashc)
    try:
        client.send(op="launch", session="demo", policy=args.policy,
                    manifest=manifest, deadlines={"session_ms": 60000})
        launched = client.expect("launched", "demo", session_id=manifest["session_id"])
        print(f"launched bubblewrap pid {launched['pid']}")

        for n in (1, 2):
            client.send(op="invoke", session="demo", tool="probe.echo",
                        input={"input": n})
            result = client.expect("result", "demo", output={"input": n})
            print(f"call {n}: {json.dumps(result['output'])}")

        client.send(op="start", session="demo", tool="probe.sleep",
                    input={"ms": 30000})
        request = client.expect("started", "demo", tool="probe.sleep")["request"]
        client.send(op="cancel", session="demo", request=request)
        client.expect("cancel", "demo", request=request, answer="acknowledged")
        print(f"cancelled {request}")

        client.send(op="close", session="demo")
        exited = client.expect("exited", "demo", how="closed", status={"exited": 0})
        print(f"closed: {json.dumps(exited['status'])}")
    except Unexpected as e:
        print(f"stdio_client: {e}", file=sys.stderr)
        client.finish()
        return 1

    status, rest = client.finish()
    if rest:
        print(f"stdio_client: unexpected events after the close: {rest}", file=sys.stderr)
        return 1
    if status != 0:
        print(f"stdio_client: splashc serve exited with {status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
