#!/usr/bin/env python3
"""dracpu-nri-agent under a systemd-style NOTIFY_SOCKET with a watchdog.

The agent runs with no runtime to connect to (it keeps retrying) and no segment; systemd's
contract still holds: READY=1 once started, WATCHDOG=1 repeatedly at less than the watchdog
interval (from a timer on its event loop), STOPPING=1 on SIGTERM, exit 0.

Usage: nri_agent_notify_e2e.py BUILD_DIR
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def main():
    build = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="dracpu-nri-notify-", dir="/tmp")
    agent = None
    messages = []
    try:
        notify_path = os.path.join(tmp, "notify.sock")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        notify.settimeout(5)
        log = open(os.path.join(tmp, "agent.log"), "w")
        agent = subprocess.Popen(
            [os.path.join(build, "nri-agent/dracpu-nri-agent"),
             "--nri-socket", os.path.join(tmp, "no-runtime.sock"),
             "--shm-path", os.path.join(tmp, "absent.shm"), "--segment-wait-ms", "100",
             "--bind-address", "127.0.0.1:0"],
            stdout=log, stderr=log,
            env=dict(os.environ, NOTIFY_SOCKET=notify_path, WATCHDOG_USEC="400000"))
        messages = []  # every line received, in order (printed on failure)
        deadline = time.time() + 10
        while time.time() < deadline and messages.count("WATCHDOG=1") < 4:
            messages += notify.recv(4096).decode().split("\n")
        assert "READY=1" in messages, "no READY=1: %s" % messages
        assert messages.count("WATCHDOG=1") >= 4, "WATCHDOG=1 not repeated: %s" % messages
        print("ok: READY=1 and repeated WATCHDOG=1 (%d)" % messages.count("WATCHDOG=1"))
        agent.send_signal(signal.SIGTERM)
        while "STOPPING=1" not in messages:
            messages += notify.recv(4096).decode().split("\n")
        rc = agent.wait(timeout=10)
        assert rc == 0, "exit status %d" % rc
        print("ok: STOPPING=1 on SIGTERM and exit 0")
        return 0
    except (AssertionError, socket.timeout) as e:
        print("FAIL:", e or "timed out", "; received:", messages)
        print(open(os.path.join(tmp, "agent.log")).read()[-3000:])
        return 1
    finally:
        if agent and agent.poll() is None:
            agent.kill()
            agent.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
