"""Native stack dumps: gdb ``thread apply all bt`` and ``thread apply all py-bt``, and the
``==== backtrace (tid: N) ====`` block UCX prints when it catches a signal.

gdb opens each thread with ``Thread 4 (Thread 0x7f... (LWP 24737) "python3"):`` (or ``(LWP
N)``, ``(process N)``) and lists ``#0  0x... in func (args) at file.c:48`` / ``from lib.so``
frames, or, for ``py-bt``, ``Traceback (most recent call first):`` and ``File "x.py", line
6, in f`` frames. A thread header of this shape is gdb's, never a py-spy dump: py-spy writes
``Thread 0x7F... (idle): "name"``. Thread ids are ``LWP N`` (the kernel thread id, which
``/proc/PID/task`` and py-spy's native mode share). A plain ``bt`` with no thread header is
the current thread (``?``); an interactive session's ``[Switching to thread 2 (... (LWP N))]``
opens thread ``LWP N``. Never raises on arbitrary text.
"""

from __future__ import annotations

from pdforensics import linear
from pdforensics.parsers.frames import Frame, ProcessDump, ThreadStack

_GDB_THREAD = linear.compile(r"^Thread (\d{1,7}) \((?:Thread (0x[0-9a-fA-F]{1,16}) )?\(?"
                         r"(?:LWP (\d{1,10})|process (\d{1,10}))\)?\)?(?: \"([^\"]{0,64})\")?\):\s*$")
_GDB_SNIFF = linear.compile(r"^(?:Thread \d{1,7} \((?:Thread 0x|LWP |process )|#\d{1,5} {1,4}0x[0-9a-fA-F]{4,16} in )",
                        linear.M)
_GDB_FRAME = linear.compile(r"^#(\d{1,5}) {1,4}(?:(0x[0-9a-fA-F]{1,16}) in )?(.*)$")
_PY_FILE = linear.compile(r'^\s{1,8}File "([^"]{1,1000})", line (\d{1,9}), in (\S{1,300})')
_PY_BUILTIN = linear.compile(r"^\s{1,8}<built-in (?:method|function) (\w{1,200})")
#: gdb naming the thread it switched to (or the current one): "[Switching to thread 2 (Thread
#: 0x75786a7ff640 (LWP 51477))]", "[Current thread is 1 (Thread 0x7f.. (LWP 9))]"
_SWITCH = linear.compile(r"^\[(?:Switching to|Current) thread (?:is )?\d{1,7} \((?:Thread 0x[0-9a-fA-F]{1,16} )?"
                         r"\(LWP (\d{1,10})\)\)\]")
_DETACHED = linear.compile(r"^\[Inferior \d{1,5} \(process (\d{1,10})\) detached\]")
_UCX_HEAD = linear.compile(r"^==== backtrace \(tid: {0,8}(\d{1,10})\) ====")
_UCX_FRAME = linear.compile(r"^\s{0,4}(\d{1,4}) {1,4}([^\s(]{1,500})\(([^)\s]{0,300})\) {0,4}"
                        r"\[(0x[0-9a-fA-F]{1,16})\]")
_UCX_HANDLER = ("ucs_handle_error", "ucs_error_signal_handler", "ucs_debug_", "ucs_log_")


def looks_like_gdb(text: str) -> bool:
    """A gdb thread header or a gdb frame line, at a line start; or a ``bt`` whose frames print
    no address (``#0  memcpy () at x.S:265``, then ``#1  ...``)."""
    head = text[:400000]
    return bool(_GDB_SNIFF.search(head)) or ("\n#1 " in head and _GDB_BARE.search(head) is not None)


#: a frame #0 without an address: a function, its arguments' parenthesis
_GDB_BARE = linear.compile(r"^#0 {1,4}[A-Za-z_][\w:~<>.]{0,300} \(", linear.M)


_UNNAMED = linear.compile(r"^(?:\?\?|__cudart\d{1,6})$")  # no symbol, or cudart's static internals


def _frame_from_gdb(body: str, address: str | None) -> Frame:
    """``func (args) at file.c:48`` / ``func () from /lib/x.so`` / ``?? ()``; a frame with no
    usable name is named by its address (as py-spy names native frames it cannot resolve)."""
    at = body.rfind(" at ")
    frm = body.rfind(" from ")
    file, line = "", None
    if at > 0 and ":" in body[at + 4:]:
        path, _, num = body[at + 4:].rpartition(":")
        file = path
        line = int(num) if num.isdigit() and len(num) < 9 else None
        body = body[:at]
    elif frm > 0:
        file = body[frm + 6:].strip()
        body = body[:frm]
    cut = body.find(" (")
    function = (body[:cut] if cut > 0 else body).strip() or "??"
    if _UNNAMED.match(function) and address:
        function = address
    return Frame(function[:500], file[:500], line, native=True)


def _py_frame(line: str) -> Frame | None:
    m = _PY_FILE.match(line)
    if m is not None:
        return Frame(m.group(3), m.group(1), int(m.group(2)))
    b = _PY_BUILTIN.match(line)
    if b is not None:
        return Frame(b.group(1), "<built-in>", None)
    return None


def parse_gdb(text: str) -> tuple[ProcessDump, ...]:
    """One dump of every gdb thread block in ``text`` (none: an empty tuple)."""
    threads: list[ThreadStack] = []
    pid: int | None = None
    cur: dict[str, object] | None = None
    frames: list[Frame] = []

    def close() -> None:
        if cur is not None:
            threads.append(ThreadStack(str(cur["tid"]), cur["name"] if isinstance(cur["name"], str)
                                       else None, "", tuple(frames)))

    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        t = _GDB_THREAD.match(line)
        if t is not None:
            close()
            frames = []
            lwp = t.group(3) or t.group(4)
            cur = {"tid": f"LWP {lwp}" if t.group(3) else f"process {lwp}", "name": t.group(5)}
            if t.group(4):
                pid = int(t.group(4))
            continue
        d = _DETACHED.match(line)
        if d is not None:
            pid = int(d.group(1))
            continue
        sw = _SWITCH.match(line)
        if sw is not None:  # an interactive session: "thread 2", then "bt"
            close()
            frames = []
            cur = {"tid": f"LWP {sw.group(1)}", "name": None}
            continue
        f = _GDB_FRAME.match(line)
        if f is not None and cur is None and f.group(1) == "0":  # a plain "bt": the current
            cur = {"tid": "?", "name": None}  # thread, unnamed (a bt starts at frame #0)
        if cur is None:
            continue
        if f is not None:
            if f.group(1) == "0" and frames:  # the same thread printed again (a second bt)
                frames = []
            frames.append(_frame_from_gdb(f.group(3), f.group(2)))
            continue
        pf = _py_frame(line)
        if pf is not None:
            frames.append(pf)
    close()
    return (ProcessDump("gdb", tuple(threads), pid),) if threads else ()


def looks_like_ucx_backtrace(text: str) -> bool:
    return "==== backtrace (tid:" in text


def parse_ucx_backtrace(text: str) -> tuple[ProcessDump, ...]:
    """Each ``==== backtrace (tid: N) ====`` block as a one-thread dump; the signal handler's
    own frames (ucs_handle_error ... the libc trampoline) are dropped, so the first frame is
    where the signal hit."""
    dumps: list[ProcessDump] = []
    tid: str | None = None
    frames: list[Frame] = []
    for raw in text.split("\n") + ["===="]:
        line = raw.rstrip("\r")
        h = _UCX_HEAD.search(line)
        m = _UCX_FRAME.match(line) if tid is not None else None
        if m is not None:
            lib, sym, addr = m.group(2), m.group(3), m.group(4)
            fn = sym.split("+", 1)[0] if sym and not sym.startswith("+") else addr
            frames.append(Frame(fn[:300], lib[:500], None, native=True))
            continue
        if tid is not None and (h is not None or line.startswith("====") or not line.strip()):
            dumps.append(ProcessDump("gdb", (ThreadStack(f"LWP {tid}", None, "",
                                                         tuple(_drop_handler(frames))),)))
            tid, frames = None, []
        if h is not None:
            tid = h.group(1)
    return tuple(d for d in dumps if d.threads[0].frames)


def _drop_handler(frames: list[Frame]) -> list[Frame]:
    if not frames or not frames[0].function.startswith(_UCX_HANDLER):
        return frames
    for i, f in enumerate(frames):
        base = f.file.rsplit("/", 1)[-1]
        if base.startswith("libc.so") or base.startswith("libpthread"):
            return frames[i + 1:] or frames
    return frames
