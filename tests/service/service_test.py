#!/usr/bin/env python3
"""End-to-end tests of ferryd as a service: systemd notify + watchdog on a socket the test
owns, config hot reload with clients connected, and the D-Bus API on a real dbus-daemon.

Run by meson (suite 'integration') with FERRYD, FERRYCTL set."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

FERRYD = os.environ.get("FERRYD", "build/daemon/ferryd")
FERRYCTL = os.environ.get("FERRYCTL", "build/daemon/tools/ferryctl/ferryctl")


class Daemon:
    """ferryd in a private XDG_RUNTIME_DIR; stderr collected to a file."""

    def __init__(self, tmp, args=(), env=None):
        self.tmp = tmp
        self.runtime = os.path.join(tmp, "run")
        os.makedirs(self.runtime, mode=0o700, exist_ok=True)
        self.socket = "ferry-svc-%d" % os.getpid()
        self.env = dict(os.environ, XDG_RUNTIME_DIR=self.runtime, XDG_CONFIG_HOME=os.path.join(tmp, "cfg"))
        self.env.pop("DBUS_SESSION_BUS_ADDRESS", None)
        self.env.pop("NOTIFY_SOCKET", None)
        if env:
            self.env.update(env)
        self.log_path = os.path.join(tmp, "ferryd.log")
        self.log = open(self.log_path, "w")
        # Headless unless a test names a backend: the default (auto) would take a display.
        backend = [] if "--backend" in args else ["--backend", "headless"]
        self.proc = subprocess.Popen([FERRYD, "--socket", self.socket, *backend, *args], env=self.env,
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = self.proc.stdout.readline()
        if "listening on WAYLAND_DISPLAY=" not in line:
            self.stop()
            raise AssertionError("ferryd did not start: %r\n%s" % (line, self.stderr()))

    def client_env(self):
        return dict(self.env, WAYLAND_DISPLAY=self.socket)

    def stderr(self):
        self.log.flush()
        with open(self.log_path) as f:
            return f.read()

    def wait_for_log(self, text, timeout=5.0):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if text in self.stderr():
                return True
            time.sleep(0.05)
        return False

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


class NotifyTest(unittest.TestCase):
    def test_ready_after_socket_and_watchdog_stops_when_frozen(self):
        with tempfile.TemporaryDirectory() as tmp:
            addr = os.path.join(tmp, "notify")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(addr)
            sock.settimeout(10)
            d = Daemon(tmp, env={"NOTIFY_SOCKET": addr, "WATCHDOG_USEC": "200000"})
            try:
                msgs = []
                while not any(m.startswith("READY=1") or "\nREADY=1" in m for m in msgs):
                    msgs.append(sock.recv(4096).decode())
                # READY=1 means the Wayland socket accepts connections.
                c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                c.connect(os.path.join(d.runtime, d.socket))
                c.close()
                # Watchdog pings every WATCHDOG_USEC/2 = 100 ms from the main loop.
                pings = []
                sock.settimeout(0.05)
                end = time.monotonic() + 1.0
                while time.monotonic() < end:
                    try:
                        if b"WATCHDOG=1" in sock.recv(4096):
                            pings.append(time.monotonic())
                    except socket.timeout:
                        pass
                self.assertGreaterEqual(len(pings), 6, "expected ~10 pings in 1 s")
                # Freeze the main loop: no ping may arrive while it is stopped.
                os.kill(d.proc.pid, signal.SIGSTOP)
                time.sleep(0.15)
                while True:  # drain what was sent before the stop
                    try:
                        sock.recv(4096)
                    except socket.timeout:
                        break
                frozen = []
                end = time.monotonic() + 1.0
                while time.monotonic() < end:
                    try:
                        if b"WATCHDOG=1" in sock.recv(4096):
                            frozen.append(time.monotonic())
                    except socket.timeout:
                        pass
                os.kill(d.proc.pid, signal.SIGCONT)
                self.assertEqual(frozen, [], "watchdog pings while the loop was frozen")
                sock.settimeout(2)
                self.assertIn(b"WATCHDOG=1", sock.recv(4096), "pings did not resume")
            finally:
                d.stop()
                sock.close()


BAD_CONFIG = """[transfer]
default = "nv12"

[[rule]]
app_id = "weston-*"
transfer = "jpeg"
"""

GOOD_CONFIG = """[[rule]]
name = "shm demos"
exe = "weston-simple-shm"
transfer = "rgb"
"""


class ReloadTest(unittest.TestCase):
    def test_bad_reload_keeps_config_and_clients(self):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = os.path.join(tmp, "ferry.toml")
            with open(cfg, "w") as f:
                f.write(GOOD_CONFIG)
            d = Daemon(tmp, args=["--config", cfg])
            client = subprocess.Popen(["weston-simple-shm"], env=d.client_env(),
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                time.sleep(1.0)
                self.assertIsNone(client.poll(), "client died before the reload")
                # inotify path: a bad file is reported with file:line:column.
                with open(cfg, "w") as f:
                    f.write(BAD_CONFIG)
                self.assertTrue(d.wait_for_log(cfg + ":6:"), d.stderr())
                # SIGHUP path, still bad: the previous config stays in force.
                d.proc.send_signal(signal.SIGHUP)
                self.assertTrue(d.wait_for_log("keeping the previous config"), d.stderr())
                self.assertIsNone(d.proc.poll(), "ferryd exited on a bad config")
                self.assertIsNone(client.poll(), "client lost on a bad reload")
                # The output still presents frames for the client: grim captures it.
                shot = os.path.join(tmp, "shot.png")
                subprocess.run(["grim", shot], env=d.client_env(), check=True, timeout=20)
                self.assertGreater(os.path.getsize(shot), 1000)
                with open(cfg, "w") as f:
                    f.write(GOOD_CONFIG.replace("rgb", "yuv444"))
                self.assertTrue(d.wait_for_log("config reloaded"), d.stderr())
                self.assertIsNone(client.poll())
            finally:
                client.kill()
                client.wait()
                d.stop()


@unittest.skipUnless(shutil.which("dbus-daemon"), "dbus-daemon missing (package dbus)")
class DbusTest(unittest.TestCase):
    def test_ferryctl_against_ferryd(self):
        with tempfile.TemporaryDirectory() as tmp:
            bus = subprocess.Popen(["dbus-daemon", "--session", "--nofork", "--print-address"],
                                   stdout=subprocess.PIPE, text=True)
            try:
                address = bus.stdout.readline().strip()
                d = Daemon(tmp, args=["--output", "800x600@75"],
                           env={"DBUS_SESSION_BUS_ADDRESS": address})
                client = subprocess.Popen(["weston-simple-shm"], env=d.client_env(),
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                try:
                    time.sleep(1.0)
                    env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=address)
                    run = lambda *a: subprocess.run([FERRYCTL, *a], env=env, text=True,
                                                    capture_output=True, timeout=10)
                    st = run("status")
                    self.assertEqual(st.returncode, 0, st.stderr)
                    self.assertIn("HEADLESS-1", st.stdout)
                    self.assertIn("800x600", st.stdout)
                    cl = run("clients")
                    self.assertEqual(cl.returncode, 0, cl.stderr)
                    self.assertIn("weston-simple-shm", cl.stdout)
                    bad = run("set-mode", "--app", "weston-simple-shm", "jpeg")
                    self.assertNotEqual(bad.returncode, 0)
                    ok = run("set-mode", "--app", "weston-simple-shm", "nv12")
                    self.assertEqual(ok.returncode, 0, ok.stderr)
                    self.assertEqual(run("reload").returncode, 0)
                finally:
                    client.kill()
                    client.wait()
                    d.stop()
            finally:
                bus.terminate()
                bus.wait()


if __name__ == "__main__":
    unittest.main(verbosity=2)
