"""A small Chrome DevTools Protocol client over a stdlib WebSocket: real headless Chromium.

One browser per test module (start-up is slow); each page is a fresh target with its own
session, so console messages, exceptions and network requests are collected per page.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import tempfile
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                  "--disable-sync", "--disable-component-update", "--disable-default-apps",
                  "--mute-audio", "--hide-scrollbars", "--remote-debugging-port=0")


class WebSocket:
    """Just enough RFC 6455 for CDP: text frames out (masked), frames in (any size)."""

    def __init__(self, url: str, timeout: float = 30.0):
        u = urllib.parse.urlparse(url)
        assert u.port is not None, url
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        req = (f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
               f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n")
        self.sock.sendall(req.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            head += chunk
        status, _, rest = head.partition(b"\r\n\r\n")
        if b" 101 " not in status.split(b"\r\n", 1)[0]:
            raise ConnectionError(f"websocket handshake refused: {status[:200]!r}")
        self.buf = rest

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("websocket closed")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def send(self, text: str) -> None:
        data = text.encode()
        head = bytearray([0x81])
        n = len(data)
        if n < 126:
            head.append(0x80 | n)
        elif n < 1 << 16:
            head.append(0x80 | 126)
            head += struct.pack(">H", n)
        else:
            head.append(0x80 | 127)
            head += struct.pack(">Q", n)
        mask = os.urandom(4)
        body = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
        self.sock.sendall(bytes(head) + mask + body)

    def recv(self) -> str:
        parts: list[bytes] = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            mask = self._read(4) if b1 & 0x80 else None
            payload = self._read(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            op = b0 & 0x0F
            if op == 0x8:
                raise ConnectionError("websocket closed by peer")
            if op == 0x9:  # ping -> pong
                continue
            if op in (0x1, 0x0, 0x2):
                parts.append(payload)
                if b0 & 0x80:
                    return b"".join(parts).decode("utf-8", "replace")

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


@dataclass
class PageLog:
    """What one page did: console calls, exceptions, log entries, network requests."""

    console: list[dict[str, Any]] = field(default_factory=list)
    exceptions: list[dict[str, Any]] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)
    dialogs: list[str] = field(default_factory=list)

    def errors(self) -> list[str]:
        out = [f"console.{c['type']}: {_args(c)}" for c in self.console
               if c.get("type") in ("error", "assert")]
        out += [f"exception: {e.get('exceptionDetails', {}).get('text')}" for e in self.exceptions]
        out += [f"log {e['entry'].get('source')}: {e['entry'].get('text')}" for e in self.log
                if e["entry"].get("level") == "error"]
        return out


def _args(c: dict[str, Any]) -> str:
    return " ".join(str(a.get("value", a.get("description", ""))) for a in c.get("args", []))


class Browser:
    """Headless Chromium driven over CDP (flattened sessions on the browser websocket)."""

    def __init__(self) -> None:
        exe = shutil.which("chromium") or shutil.which("chromium-browser")
        if exe is None:
            raise RuntimeError("chromium is not installed (scripts/test.sh installs it)")
        self.profile = tempfile.mkdtemp(prefix="pdfx-chromium-")
        self.proc = subprocess.Popen([exe, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}",
                                      "about:blank"], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        port_file = Path(self.profile) / "DevToolsActivePort"
        end = time.monotonic() + 90
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if self.proc.poll() is not None or time.monotonic() > end:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port, path = port_file.read_text().splitlines()[:2]
        self.ws = WebSocket(f"ws://127.0.0.1:{port}{path}")
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def call(self, method: str, params: dict[str, Any] | None = None, session: str | None = None,
             timeout: float = 60.0) -> dict[str, Any]:
        self.next_id += 1
        msg: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        self.ws.send(json.dumps(msg))
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            m = json.loads(self.ws.recv())
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return dict(m.get("result", {}))
            self.events.append(m)
        raise TimeoutError(method)

    def wait_event(self, method: str, session: str, timeout: float = 60.0) -> dict[str, Any]:
        end = time.monotonic() + timeout
        for i, m in enumerate(self.events):
            if m.get("method") == method and m.get("sessionId") == session:
                return self.events.pop(i)
        while time.monotonic() < end:
            m = json.loads(self.ws.recv())
            if m.get("method") == method and m.get("sessionId") == session:
                return m
            self.events.append(m)
        raise TimeoutError(method)

    def open(self, url: str, width: int = 1280, height: int = 800, scripts: bool = True) -> Page:
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=session)
        self.call("Emulation.setDeviceMetricsOverride", {"width": width, "height": height,
                                                         "deviceScaleFactor": 1, "mobile": False},
                  session=session)
        if not scripts:
            self.call("Emulation.setScriptExecutionDisabled", {"value": True}, session=session)
        page = Page(self, target, session)
        self.events = [m for m in self.events if m.get("sessionId") != session]
        self.call("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session)
        time.sleep(0.3)  # let late console messages arrive
        page.collect()
        return page

    def close(self) -> None:
        ws = getattr(self, "ws", None)
        if ws is not None:
            try:
                self.call("Browser.close", timeout=10)
            except (OSError, RuntimeError, TimeoutError, ConnectionError):
                pass
            ws.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    def __init__(self, browser: Browser, target: str, session: str):
        self.browser = browser
        self.target = target
        self.session = session
        self.log = PageLog()

    def collect(self) -> None:
        """Drain buffered events of this page into its log (plus whatever is pending now)."""
        self.browser.call("Runtime.evaluate", {"expression": "1"}, session=self.session)
        keep = []
        for m in self.browser.events:
            if m.get("sessionId") != self.session:
                keep.append(m)
                continue
            method, p = m.get("method"), m.get("params", {})
            if method == "Runtime.consoleAPICalled":
                self.log.console.append(p)
            elif method == "Runtime.exceptionThrown":
                self.log.exceptions.append(p)
            elif method == "Log.entryAdded":
                self.log.log.append(p)
            elif method == "Network.requestWillBeSent":
                self.log.requests.append(p["request"]["url"])
            elif method == "Page.javascriptDialogOpening":
                self.log.dialogs.append(p.get("message", ""))
        self.browser.events = keep

    def eval(self, expression: str) -> Any:
        r = self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True},
                              session=self.session)
        if "exceptionDetails" in r:
            raise RuntimeError(f"evaluate failed: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            params["captureBeyondViewport"] = True
        data = self.browser.call("Page.captureScreenshot", params, session=self.session)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def pdf(self, path: Path) -> Path:
        data = self.browser.call("Page.printToPDF", {"printBackground": True}, session=self.session,
                                 timeout=120)["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target})
