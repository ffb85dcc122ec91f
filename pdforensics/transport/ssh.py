"""SSH transport: one paramiko connection per host, many concurrent exec channels."""

from __future__ import annotations

import logging
import shlex
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import paramiko

from pdforensics.config.known_hosts import fingerprint
from pdforensics.errors import HostKeyError, TransportError
from pdforensics.model import CommandResult, HostSpec
from pdforensics.transport.banner import strip_banner
from pdforensics.transport.base import STDERR_CAP, local_wait_s
from pdforensics.transport.http_forward import ResponseReader, build_request
from pdforensics.transport.runner import SessionRunner
from pdforensics.transport.sftp_read import SftpReader
from pdforensics.transport.ssh_params import SshParams, key_files, resolve_ssh_params

BACKPRESSURE_SLEEP_S = 0.1
EOF_GRACE_S = 2.0  # how long output may still follow the exit status

# paramiko logs every refused channel open at ERROR; those are handled here as data.
logging.getLogger("paramiko").setLevel(logging.CRITICAL)


class _AeadFirstTransport(paramiko.Transport):
    """paramiko's own algorithms, AES-GCM offered first: one C call per packet instead of
    CTR plus an HMAC that paramiko compares byte by byte in Python (~7% of a 32-host
    capture's CPU). A server without GCM still gets the usual CTR ciphers."""

    _preferred_ciphers = tuple(sorted(
        paramiko.Transport._preferred_ciphers,  # type: ignore[attr-defined]  # not in the stubs
        key=lambda c: "gcm" not in c))  # a stable sort: the order is otherwise paramiko's


class SshTransport:
    """Runs commands over one SSH connection; channels opened concurrently, retried on
    'administratively prohibited' (the server's MaxSessions back-pressure)."""

    def __init__(self, host: HostSpec, accept_new_host_keys: bool = False, runner: bool = False):
        self.host = host
        self.accept_new_host_keys = accept_new_host_keys
        self._client: paramiko.SSHClient | None = None
        self._jump: paramiko.SSHClient | None = None
        self._closed = threading.Event()
        self._channels: set[paramiko.Channel] = set()
        self._lock = threading.Lock()
        self.forwarding_refused = False  # sshd said no to direct-tcpip: endpoints go by curl
        self._files = SftpReader(host.name, self._open_channel, self._release, self._closed,
                                 lambda: self.connection_lost)
        # runner: every command and file read through one exec channel (see runner.py)
        self.runner = (SessionRunner(host.name, self._open_channel, self._closed,
                                     lambda: self.connection_lost,
                                     as_root=host.sudo and host.runner_sudo) if runner else None)

    # -- connection -------------------------------------------------------------------
    def connect(self, timeout_s: float) -> None:
        params = resolve_ssh_params(self.host)
        sock = None
        if params.proxy_jump:
            sock = self._open_jump(params, timeout_s)
        client = paramiko.SSHClient()
        self._load_host_keys(client, params.known_hosts)
        label = f"{self.host.name} ({params.hostname}:{params.port})"
        try:
            client.connect(
                params.hostname, port=params.port, username=params.user,
                key_filename=key_files(params), timeout=timeout_s,
                banner_timeout=timeout_s, auth_timeout=timeout_s, channel_timeout=timeout_s,
                allow_agent=True, look_for_keys=not params.identities, sock=sock,
                transport_factory=cast(Any, _AeadFirstTransport),
            )
        except paramiko.BadHostKeyException as exc:
            raise HostKeyError(
                f"{label}: host key CHANGED (got {exc.key.get_name()} "
                f"{fingerprint(exc.key.asbytes())}); refusing to connect. If the host was "
                "rebuilt, remove its old line from known_hosts."
            ) from None
        except paramiko.SSHException as exc:
            text = str(exc)
            if "not found in known_hosts" in text:
                offered = text.partition("offered ")[2]
                raise HostKeyError(
                    f"{label}: unknown host key{' ' + offered if offered else ''}, not in "
                    f"{params.known_hosts or 'known_hosts'}; verify it and add it, or pass "
                    "--accept-new-host-keys"
                ) from None
            if isinstance(exc, paramiko.AuthenticationException):
                raise TransportError(
                    f"{label}: authentication failed for user {params.user or '(default)'}"
                ) from None
            transport = client.get_transport()
            if "banner" in text or transport is None or not transport.remote_version:
                client.close()
                raise TransportError(
                    f"{label}: SSH handshake timed out: no SSH banner within {timeout_s:.0f}s "
                    "(the port accepts TCP but does not answer SSH)") from None
            if transport.session_id is None:  # banner came, key exchange never finished
                client.close()
                raise TransportError(
                    f"{label}: SSH handshake stalled after the banner ({transport.remote_version}): "
                    f"no key exchange within {timeout_s:.0f}s (sshd overloaded, MaxStartups, or "
                    "a middlebox holding the connection)") from None
            raise TransportError(f"{label}: SSH failed: {text or type(exc).__name__}") from None
        except TimeoutError:
            raise TransportError(f"{label}: connection timed out after {timeout_s:.0f}s") from None
        except OSError as exc:
            raise TransportError(f"{label}: cannot connect: {exc.strerror or exc}") from None
        transport = client.get_transport()
        if transport is not None:
            transport.set_keepalive(5)
        self._client = client

    def _open_jump(self, params: SshParams, timeout_s: float) -> paramiko.Channel:
        assert params.proxy_jump is not None
        jump_host = HostSpec(name=f"{self.host.name}-jump", address=params.proxy_jump,
                             known_hosts=self.host.known_hosts)
        jparams = resolve_ssh_params(jump_host)
        jump = paramiko.SSHClient()
        self._load_host_keys(jump, jparams.known_hosts)
        try:
            jump.connect(jparams.hostname, port=jparams.port, username=jparams.user,
                         key_filename=key_files(jparams), timeout=timeout_s,
                         banner_timeout=timeout_s, auth_timeout=timeout_s)
            jt = jump.get_transport()
            assert jt is not None
            chan = jt.open_channel("direct-tcpip", (params.hostname, params.port), ("", 0),
                                   timeout=timeout_s)
        except (paramiko.SSHException, OSError) as exc:
            raise TransportError(f"{self.host.name}: ProxyJump {params.proxy_jump} failed: {exc}"
                                 ) from None
        self._jump = jump
        return chan

    def _load_host_keys(self, client: paramiko.SSHClient, known_hosts: str | None) -> None:
        if known_hosts:
            if not Path(known_hosts).exists():
                raise HostKeyError(f"{self.host.name}: known_hosts file {known_hosts} not found")
            client.load_host_keys(known_hosts)
        else:
            client.load_system_host_keys()
        policy: paramiko.MissingHostKeyPolicy
        policy = paramiko.AutoAddPolicy() if self.accept_new_host_keys else _RejectNamingKey()
        client.set_missing_host_key_policy(policy)

    # -- commands ---------------------------------------------------------------------
    def run(
        self, source: str, argv: Sequence[str], timeout_s: float, max_bytes: int
    ) -> CommandResult:
        if self.runner is not None:
            through = self.runner.run(source, argv, timeout_s, max_bytes)
            if through is not None:
                return through
        started = time.time()
        t0 = time.monotonic()
        wait_s = local_wait_s(timeout_s)
        chan, error = self._open_channel(t0 + wait_s)
        if chan is None:
            return CommandResult(
                host=self.host.name, source=source, argv=tuple(argv), exit_status=None,
                stdout=b"", stderr="", duration_s=time.monotonic() - t0, started_at=started,
                error=error, timed_out=error == "timed out opening a channel",
            )
        try:
            chan.exec_command(shlex.join(argv))
            out, err, truncated, timed_out, status = _pump(chan, t0 + wait_s, max_bytes,
                                                          self._closed)
            error = None
            if status is None and not timed_out and not truncated:
                if self._closed.is_set():
                    error = "capture stopped"
                elif self.connection_lost:
                    error = "connection lost"
                else:
                    error = "ended without an exit status (killed by a signal on the host?)"
        except (paramiko.SSHException, OSError, EOFError) as exc:
            out, err, truncated, timed_out, status = b"", b"", False, False, None
            error = "connection lost" if self.connection_lost else f"channel failed: {exc or type(exc).__name__}"
        finally:
            with self._lock:
                self._channels.discard(chan)
            _close_quietly(chan)
        result = CommandResult(
            host=self.host.name, source=source, argv=tuple(argv), exit_status=status,
            stdout=out, stderr=err.decode("utf-8", "replace"),
            duration_s=time.monotonic() - t0, started_at=started,
            timed_out=timed_out, truncated=truncated, error=error,
        )
        # a fallback from the runner: the login shell printed its banner before this command too
        return strip_banner(result, self.runner.banner) if self.runner is not None else result

    def read_file(self, source: str, path: str, timeout_s: float, max_bytes: int,
                  tail: bool = False) -> CommandResult | None:
        """Read a file through the runner, else over the connection's SFTP session (no shell,
        no process on the host); None when neither can (see `read_refused`): run the command."""
        if self.runner is not None:
            through = self.runner.read(source, path, timeout_s, max_bytes, tail)
            if through is not None:
                return through
        return self._files.read(source, path, timeout_s, max_bytes, tail)

    @property
    def read_refused(self) -> str | None:
        """Why files cannot be read over SFTP on this host (None: they can, or not tried)."""
        return self._files.refused

    def _release(self, chan: paramiko.Channel) -> None:
        with self._lock:
            self._channels.discard(chan)
        chan.close()

    def fetch(self, source: str, url: str, timeout_s: float, max_bytes: int,
              body: bytes | None = None) -> CommandResult | None:
        """GET url from the host's side through this connection (a direct-tcpip channel, as
        `ssh -L` uses): nothing runs on the host. None when this cannot be done here (not
        http://, or sshd refuses forwarding): the caller runs curl on the host instead."""
        request = build_request(url, body)
        if request is None or self.forwarding_refused:
            return None
        started, t0 = time.time(), time.monotonic()

        def result(out: bytes = b"", error: str | None = None, timed_out: bool = False,
                   truncated: bool = False, status: int | None = None,
                   stderr: str = "") -> CommandResult:
            return CommandResult(host=self.host.name, source=source,
                                 argv=("GET", url) if body is None else ("POST", url),
                                 exit_status=status, stdout=out, stderr=stderr,
                                 duration_s=time.monotonic() - t0, started_at=started,
                                 timed_out=timed_out, truncated=truncated, error=error)

        opened = self._open_forward(request.host, request.port, t0 + timeout_s)
        if opened is None:
            return None  # forwarding refused: curl on the host instead
        if isinstance(opened, tuple):
            return result(error=opened[0], timed_out=opened[1])
        reader, error, timed_out, truncated, eof = self._exchange(opened, request.data,
                                                                  t0 + timeout_s, max_bytes)
        out = reader.curl_form()
        if error is None and not timed_out and not out:
            error = "the server closed the connection without a response"
        # 0 when the exchange finished, as curl's exit status would be (any HTTP status)
        status = 0 if error is None and not timed_out and not truncated else None
        if status == 0 and eof and reader.cut_short():  # closed before the promised body
            return result(out, status=18,
                          stderr="transfer closed with outstanding read data remaining")
        return result(out, error, timed_out, truncated, status)

    def _open_forward(self, host: str, port: int, deadline: float
                      ) -> paramiko.Channel | tuple[str, bool] | None:
        """A direct-tcpip channel to host:port; None when sshd refuses forwarding, else
        (error, timed_out) when it could not be opened."""
        transport = self._client.get_transport() if self._client else None
        if self._closed.is_set():
            return "capture stopped", False
        if transport is None or not transport.is_active():
            return "connection lost", False
        target = f"{host}:{port}"
        while True:
            if self.forwarding_refused:  # found out by another channel meanwhile
                return None
            if self._closed.is_set():
                return "capture stopped", False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return f"timed out connecting to {target}", True
            try:
                chan = transport.open_channel("direct-tcpip", (host, port), ("127.0.0.1", 0),
                                              timeout=remaining)
            except paramiko.ChannelException as exc:
                if exc.code == 1:  # administratively prohibited: AllowTcpForwarding no, or similar
                    self.forwarding_refused = True
                    return None
                # the host's sshd could not connect: the endpoint refused or is unreachable
                return (f"cannot connect to {target} from the host: "
                        f"{exc.text or 'connect failed'}", False)
            except (paramiko.SSHException, OSError, EOFError) as exc:
                if "Timeout opening channel" in str(exc):
                    return f"timed out connecting to {target}", True
                if "Unable to open channel" in str(exc) and transport.is_active():
                    # refused, reason unknown: paramiko keeps one saved exception per
                    # connection, so of several opens refused at once only one thread gets the
                    # ChannelException (and its code); ask again to learn ours
                    time.sleep(BACKPRESSURE_SLEEP_S)
                    continue
                return ("connection lost" if self.connection_lost else
                        f"channel failed: {exc or type(exc).__name__}", False)
            with self._lock:
                self._channels.add(chan)
            return chan

    def _exchange(self, chan: paramiko.Channel, request: bytes, deadline: float, max_bytes: int
                  ) -> tuple[ResponseReader, str | None, bool, bool, bool]:
        """Send the request, read the response until complete, EOF, the cap or the deadline:
        (reader, error, timed_out, truncated, eof). Closes the channel."""
        reader = ResponseReader()
        timed_out = truncated = eof = False
        error = None
        try:
            chan.sendall(request)
            while not reader.complete():
                if self._closed.is_set():
                    error = "capture stopped"
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    timed_out = True
                    break
                chan.settimeout(min(remaining, 0.5))
                try:
                    chunk = chan.recv(65536)
                except TimeoutError:
                    continue
                if not chunk:
                    eof = True
                    break  # the server closed: the response ends here
                if _take(reader.raw, chunk, max_bytes):
                    truncated = True
                    break
        except (paramiko.SSHException, OSError, EOFError) as exc:
            error = "connection lost" if self.connection_lost else f"channel failed: {exc or type(exc).__name__}"
        finally:
            with self._lock:
                self._channels.discard(chan)
            _close_quietly(chan)
        return reader, error, timed_out, truncated, eof

    def _open_channel(self, deadline: float) -> tuple[paramiko.Channel | None, str | None]:
        """Open an exec channel, waiting out MaxSessions back-pressure until the deadline."""
        while True:
            if self._closed.is_set():
                return None, "capture stopped"
            transport = self._client.get_transport() if self._client else None
            if transport is None or not transport.is_active():
                return None, "connection lost"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, "timed out opening a channel"
            try:
                chan = transport.open_session(timeout=remaining)
            except paramiko.ChannelException as exc:
                # OpenSSH refuses a session past MaxSessions (administratively prohibited,
                # or "connect failed" while closed sessions are still being torn down):
                # back-pressure, so wait and retry until this job's own deadline.
                if exc.code in (1, 2):
                    time.sleep(BACKPRESSURE_SLEEP_S)
                    continue
                return None, f"channel refused: {exc.text}"
            except (paramiko.SSHException, OSError, EOFError) as exc:
                if "Timeout opening channel" in str(exc):
                    return None, "timed out opening a channel"
                if "Unable to open channel" in str(exc) and transport.is_active():
                    # paramiko keeps one saved exception per connection: when two opens are
                    # refused at once, one thread takes the other's ChannelException and the
                    # other sees this bare message. Same back-pressure: wait and retry.
                    time.sleep(BACKPRESSURE_SLEEP_S)
                    continue
                if self.connection_lost:
                    return None, "connection lost"
                return None, f"channel failed: {exc or type(exc).__name__}"
            with self._lock:
                self._channels.add(chan)
            return chan, None

    @property
    def connection_lost(self) -> bool:
        """The connection went away without us closing it (sshd killed, network cut)."""
        transport = self._client.get_transport() if self._client else None
        return not self._closed.is_set() and (transport is None or not transport.is_active())

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            chans = list(self._channels)
        for chan in chans:
            _close_quietly(chan)
        for client in (self._client, self._jump):
            if client is not None:
                client.close()


def _pump(
    chan: paramiko.Channel, deadline: float, max_bytes: int, stop: threading.Event
) -> tuple[bytes, bytes, bool, bool, int | None]:
    """Read a channel with caps until exit, deadline or stop."""
    out = bytearray()
    err = bytearray()
    truncated = timed_out = False
    exit_seen = 0.0
    chan.settimeout(0.2)
    while True:
        if stop.is_set():
            break
        if time.monotonic() >= deadline:
            timed_out = True
            break
        got = False
        if chan.recv_ready():
            got = True
            if _take(out, chan.recv(65536), max_bytes):
                truncated = True
                break
        if chan.recv_stderr_ready():
            chunk = chan.recv_stderr(65536)
            got = True
            if len(err) < STDERR_CAP:
                err += chunk[: STDERR_CAP - len(err)]
        if not got:
            if chan.closed or (chan.eof_received and chan.exit_status_ready()):
                break
            if chan.exit_status_ready():
                # sshd can send the exit status before the rest of the output (still in the
                # command's pipe): it is the end of the output only once EOF comes, or after a
                # grace for a command whose children keep the pipe open.
                exit_seen = exit_seen or time.monotonic()
                if time.monotonic() - exit_seen >= EOF_GRACE_S:
                    break
            if chan.get_transport() is None or not chan.get_transport().is_active():
                break
            wait_s = min(0.2, max(0.0, deadline - time.monotonic()))
            if chan.eof_received:  # stdout is done: wait for the exit status
                chan.status_event.wait(wait_s)
                continue
            # Block on stdout itself (data, its end, or the timeout), not on chan.fileno()/select:
            # Channel.close() closes that pipe while paramiko's transport thread may still write
            # its wake-up byte to it (PosixPipe.set checks `_closed`, set only after both closes),
            # and by then the fd number can be another connection's socket or an evidence file.
            chan.settimeout(max(0.001, wait_s))
            try:
                chunk = chan.recv(65536)
            except TimeoutError:
                continue
            if _take(out, chunk, max_bytes):
                truncated = True
                break
    status = chan.recv_exit_status() if chan.exit_status_ready() else None
    if status == -1:  # paramiko's value for "closed without an exit status"
        status = None
    return bytes(out), bytes(err), truncated, timed_out, status


def _take(out: bytearray, chunk: bytes, max_bytes: int) -> bool:
    """Append chunk up to the byte cap; True when the cap cut it."""
    room = max_bytes - len(out)
    out += chunk[:room]
    return len(chunk) > room


class _RejectNamingKey(paramiko.MissingHostKeyPolicy):
    """RejectPolicy whose error carries the offered key's type and SHA256 fingerprint."""

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey) -> None:
        raise paramiko.SSHException(f"Server {hostname!r} not found in known_hosts; offered "
                                    f"{key.get_name()} {fingerprint(key.asbytes())}")


def _close_quietly(chan: paramiko.Channel) -> None:
    """Close a channel whose connection may be gone already: paramiko then raises EOFError
    from the close message (seen when close() ends a capture with channels in flight)."""
    try:
        chan.close()
    except (paramiko.SSHException, OSError, EOFError):
        pass
