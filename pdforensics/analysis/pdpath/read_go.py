"""Go goroutine dumps (a client of the router or of a server) -> clues.

A goroutine in ``net/http.(*Transport).getConn`` waits for a connection from the pool (all
connections to that host are busy: ``MaxConnsPerHost``), one in ``persistConn.roundTrip``
has sent its request and waits for the reply: either way the client waits on a server, a
victim of whatever holds the server. A dump of one goroutine names it; goroutines parked in
accept, the netpoller, signal handling or the runtime hold nothing.
"""

from __future__ import annotations

from collections.abc import Iterator

from pdforensics import linear
from pdforensics.analysis.pdpath.model import Clue, Side, Stage
from pdforensics.analysis.pdpath.sources import Source, reader
from pdforensics.parsers.frames import ThreadStack
from pdforensics.parsers.linescan import first_line_with

#: the runtime's last words: "panic: send on closed channel", "fatal error: concurrent map
#: writes" (the goroutine it names next is the one that raised it)
_PANIC = linear.compile(r"^(?:panic: |fatal error: )\S")
#: a time stamp right after "fatal error: " is another writer's log line cut into it
_STAMP_AFTER = linear.compile(r"^(?:panic|fatal error): \d{4}[/-]\d\d[/-]\d\d[ T]\d\d:\d\d")

_GETCONN = "net/http.(*Transport).getConn"
_ROUNDTRIP = ("net/http.(*persistConn).roundTrip", "net/http.(*Transport).roundTrip")
_IDLE = ("net.(*netFD).accept", "net/http.(*Server).Serve", "os/signal.signal_recv",
         "runtime.gopark", "runtime.goparkunlock", "net/http.(*persistConn).readLoop",
         "net/http.(*persistConn).writeLoop", "internal/poll.runtime_pollWait",
         "runtime.notetsleepg", "runtime.futex")


#: a connection being made: the dialer, the resolver (DNS), the transport's dialConn
_DIAL = ("net.(*Dialer).DialContext", "net.(*Resolver).", "net.(*sysDialer).",
         "net/http.(*Transport).dialConn", "net/http.(*Transport).dial")
#: an HTTP client's open connections: one reader and one writer goroutine each
_CONN_LOOPS = ("net/http.(*persistConn).readLoop", "net/http.(*persistConn).writeLoop")


def _dial_step(g: ThreadStack) -> str:
    """What a dialling goroutine is doing: resolving the name or connecting."""
    return "a DNS lookup" if _has(g, "net.(*Resolver).") else "connecting"


#: goroutine states that wait for another goroutine of the same program
_BLOCKING = ("chan send", "chan receive", "select", "semacquire", "sync.Mutex.Lock",
             "sync.RWMutex.Lock", "sync.RWMutex.RLock", "sync.Cond.Wait", "sync.WaitGroup.Wait")


def _has(g: ThreadStack, names: tuple[str, ...] | str) -> bool:
    want = (names,) if isinstance(names, str) else names
    return any(f.function.startswith(w) for f in g.frames for w in want)


def _user(g: ThreadStack) -> bool:
    """A goroutine of the program (not the runtime's own, not goroutine 0)."""
    if g.thread_id in ("0",):
        return False
    return any(not f.function.startswith(("runtime.", "internal/")) for f in g.frames) \
        or g.state == "running"


@reader("goroutines")
def goroutine_clues(src: Source) -> Iterator[Clue]:
    """HTTP client waits (getConn / roundTrip) and the one goroutine a short dump names."""
    if not src.goroutines:
        return
    gs = [g for g in src.goroutines if _user(g)]
    panic = _panic_clue(src, gs)
    if panic is not None:
        yield panic
        return
    if not gs:
        return
    dialing = [g for g in gs if _has(g, _DIAL)]
    waiting = [g for g in gs if (_has(g, _GETCONN) or _has(g, _ROUNDTRIP)) and g not in dialing]
    single = f"goroutine {gs[0].thread_id}" if len(gs) == 1 and gs[0].count == 1 \
        and gs[0].thread_id.isdigit() else None
    # a connection being dialled (a DNS lookup, a TCP connect) is what getConn waits on: the
    # one goroutine dialling is where to look
    dialer = f"goroutine {dialing[0].thread_id}" if len(dialing) == 1 \
        and dialing[0].count == 1 and dialing[0].thread_id.isdigit() else None
    for g in waiting[:20]:
        pooled = _has(g, _GETCONN)
        waits = f"{g.wait_minutes} minutes" if g.wait_minutes is not None else "a duration unknown"
        what = ("waits for a pooled connection (getConn: every connection to the host busy)"
                if pooled else "sent its request and waits for the reply (roundTrip)")
        yield Clue(key="CLIENT_HTTP_WAIT", label="consequence", stage="not_applicable",
                   side="client", text=f"{g.count} goroutine(s) {what} for {waits}"
                   + (f" (goroutine {g.thread_id})" if g.count == 1 else ""),
                   source=src.path, host=src.host,
                   suspect=(dialer if pooled and dialer else single), wedge=True, strength=2,
                   why="a Go HTTP client waiting on a server: a victim of what holds it"
                   + (f"; {dialer} dials the connection it waits for ({_dial_step(dialing[0])})"
                      if pooled and dialer else ""))
    if waiting:
        return
    blocked = [g for g in gs if g.state.split(",")[0] in _BLOCKING and not _has(g, _IDLE)]
    if any((g.wait_minutes or 0) >= 1 for g in blocked):
        for g in blocked[:20]:  # one of them has waited minutes: the program is held there
            header = f"goroutine {g.thread_id} [{g.state}" + (
                f", {g.wait_minutes} minutes" if g.wait_minutes else "") + "]:"
            yield Clue(key="GOROUTINE_BLOCKED", label="consequence", stage="not_applicable",
                       text=f"{header} in {g.frames[0].function if g.frames else '?'}",
                       source=src.path, host=src.host, wedge=True, strength=1,
                       why="a goroutine of the program blocked on a channel or a lock, one of "
                           "them for minutes: it waits for a goroutine that does not come")
        return
    if single is not None:
        g = gs[0]
        yield Clue(key="GOROUTINE", label="cause", stage="not_applicable", suspect=single,
                   text=f"{single} [{g.state}] in {g.frames[0].function if g.frames else '?'}",
                   source=src.path, host=src.host, strength=1,
                   why="the one goroutine the dump shows")
    elif all(_has(g, _IDLE) for g in gs):
        conns = sum(g.count for g in gs if _has(g, _CONN_LOOPS))
        total = sum(g.count for g in gs)
        yield Clue(key="GOROUTINES_IDLE", label="noise", stage="not_applicable",
                   text=f"{total} goroutines, every one parked in accept, the netpoller, "
                        "signals or the runtime"
                        + (f"; {conns} of them an HTTP client's connections (persistConn read "
                           "and write loops)" if conns else ""),
                   source=src.path, host=src.host, wedge=False,
                   # most of them a client's open connections: the program is that client
                   side="client" if conns * 2 > total else None,
                   why="no goroutine waits on a request")


#: package paths of LLM gateways and routers (smg, llm-d's endpoint picker, the Gateway API
#: inference extension, LLM proxies): a crash there is on the router side
_GATEWAY_PKG = ("gateway", "router", "/epp/", "inference-scheduler", "inference-extension",
                "llm-d", "bifrost", "litellm", "envoy")
#: what the crashing frames do: answer the client, or pick a worker
_STREAM_WORDS = ("Response", "Stream", "WriteMessage", "sendMessage", "Flush", "flush")
_DISPATCH_WORDS = ("Pick", "pick", "Schedul", "Route", "Dispatch", "Filter", "Score")
#: a gateway's control plane (a Kubernetes controller reconciling or translating its objects)
_CONTROL_WORDS = ("/controller/", "Reconcile", "reconcile", "translate", "Informer")


def _gateway_place(g: ThreadStack | None) -> tuple[Side | None, Stage]:
    """(router, the stage its frames are in) for a goroutine of an LLM gateway; (None,
    not_applicable) for any other program."""
    if g is None:
        return None, "not_applicable"
    mine = [f.function for f in g.frames if not f.function.startswith(("runtime.", "internal/"))]
    if not any(w in fn.lower() for fn in mine[:12] for w in _GATEWAY_PKG):
        return None, "not_applicable"
    for fn in mine[:12]:
        if any(w in fn for w in _CONTROL_WORDS):
            return "router", "not_applicable"  # its control plane: no request goes through it
        if any(w in fn for w in _STREAM_WORDS):
            return "router", "stream_back"
        if any(w in fn for w in _DISPATCH_WORDS):
            return "router", "router_dispatch"
    return "router", "not_established"


def _panic_clue(src: Source, gs: list[ThreadStack]) -> Clue | None:
    """The program crashed: the runtime's panic or fatal error line is the cause, the first
    goroutine of the trace (the running one) the suspect; a crash is no wedge."""
    found = first_line_with(src.text, ("panic: ", "fatal error: ", "http: panic serving "))
    why = "the Go runtime's panic / fatal error: the program crashed here"
    if found is not None and _PANIC.match(found[1]) is None and "http: panic serving " in found[1]:
        # net/http recovered a handler's panic ("http: panic serving ADDR: ERR", then the
        # handler's goroutine): that request failed, the server goes on
        why = "net/http recovered a panic of the handler serving this request: it failed here"
    elif found is None or _PANIC.match(found[1]) is None:
        found = first_line_with(src.text, ("Observed a panic",))  # k8s HandleCrash's log line
        if found is None or "panic" not in found[1].split("Observed a panic", 1)[1]:
            return None
    no, line = found
    if _STAMP_AFTER.match(line) is not None:
        # another writer's line cut into the runtime's (both wrote to one stream at once):
        # the runtime's message is the next line, as it goes on after the interruption
        rest = src.text.split("\n", no + 1)
        nxt = rest[no].strip() if len(rest) > no else ""
        if nxt and len(nxt) <= 200 and not nxt.startswith("goroutine "):
            line = f"fatal error: {nxt}" if line.startswith("fatal") else f"panic: {nxt}"
            no += 1
    running = next((g for g in gs if g.state.startswith("running") and g.thread_id.isdigit()),
                   gs[0] if gs and gs[0].thread_id.isdigit() else None)
    side, stage = _gateway_place(running)
    where = _panicked_in(running)
    return Clue(key="GO_PANIC", label="cause", stage=stage, side=side,
                text=line.strip()[:500] + (f" [panicked in {where}]" if where else ""),
                source=src.path, line=no, host=src.host,
                suspect=f"goroutine {running.thread_id}" if running is not None else None,
                wedge=False, strength=3, why=why)


def _panicked_in(g: ThreadStack | None) -> str | None:
    """The function the running goroutine panicked in: the frame below the runtime's ``panic``
    (a crash handler's frames above it are the handler's)."""
    if g is None:
        return None
    frames = list(g.frames)
    at = max((i for i, f in enumerate(frames) if f.function in ("panic", "runtime.gopanic")),
             default=None)
    if at is None or at + 1 >= len(frames):
        return None
    f = frames[at + 1]
    return f"{f.function} ({f.location()})" if f.location() else f.function
