"""Find SGLang servers, routers and their ranks in a host's process table."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pdforensics import linear
from pdforensics.catalog.cmdline import flag_value, has_flag
from pdforensics.model import ProcessInfo, Role, ServiceSpec
from pdforensics.parsers.proc import PsRow, PsTable

SERVER_MODULES = ("sglang.launch_server", "sglang.srt.server")
ROUTER_MODULES = ("sglang_router.launch_router", "sglang_router.launch_server", "smg.launch_router")
#: smg sets its process title, which replaces its whole command line (flags included)
ROUTER_TITLES = ("smg::router",)
ROUTER_BINARIES = ("sgl-model-gateway", "smg", "sglang-router", "sgl-router")
TITLE = linear.compile(r"^sglang::(\w+?)(?:_((?:DP\d+_)?(?:PP\d+_)?TP\d+(?:_EP\d+)?))?(?:\s|$)")
#: A child started by multiprocessing's spawn (SGLang spawns its ranks): its python command line.
SPAWN_CHILD = linear.compile(r"from multiprocessing\.spawn import spawn_main|--multiprocessing-fork")
RESOURCE_TRACKER = "multiprocessing.resource_tracker"
FORKSERVER = "multiprocessing.forkserver"  # its children are the server's workers
DEFAULT_SERVER_PORT = 30000
DEFAULT_ROUTER_METRICS_PORT = 29000


@dataclass(frozen=True)
class Service:
    """A server or router on a host, with the processes that belong to it."""

    role: Role
    kind: str  # server | router
    port: int
    address: str  # where to reach its HTTP port from the host itself
    root_pid: int | None
    pids: tuple[int, ...]
    metrics_port: int | None
    unit: str | None
    log_file: str | None
    declared: bool
    tp_size: int = 1
    dp_size: int = 1
    metrics_enabled: bool = True
    bootstrap_port: int | None = None

    @property
    def label(self) -> str:
        return f"{self.role}:{self.port}"


@dataclass(frozen=True)
class Discovery:
    processes: tuple[ProcessInfo, ...]
    services: tuple[Service, ...]
    missing: tuple[str, ...] = ()  # declared services with no process found


#: processes that start a server and stay its parent, carrying its command line in theirs
#: (`srun ... python -m sglang.launch_server`, `bash -c "..."`): never the server itself
LAUNCHERS = frozenset({"srun", "salloc", "sbatch", "mpirun", "mpiexec", "timeout", "sh", "bash",
                       "dash", "zsh"})


def classify(args: str) -> tuple[str, str | None] | None:
    """(kind, rank) of a process from its ps args, or None when it is not SGLang's."""
    first = args.split(maxsplit=1)[0] if args.strip() else ""
    if first.rsplit("/", 1)[-1] in LAUNCHERS:
        return None
    m = TITLE.match(args)
    if m:
        name = m.group(1)
        kind = name if name in ("scheduler", "detokenizer", "tokenizer") else "other"
        return kind, m.group(2)
    tokens = args.split()
    for i, tok in enumerate(tokens[:-1]):
        if tok == "-m" and tokens[i + 1] in SERVER_MODULES:
            return "server", None
        if tok == "-m" and tokens[i + 1] in ROUTER_MODULES:
            return "router", None
    if tokens:
        base = tokens[0].rsplit("/", 1)[-1]
        if base in ROUTER_BINARIES or tokens[0] in ROUTER_TITLES:
            return "router", None
        if "python" in base and len(tokens) > 1 and tokens[1].rsplit("/", 1)[-1] in ROUTER_BINARIES:
            return "router", None  # a console script: `python .../bin/smg launch ...`
        if "python" in base and any(t.endswith("sglang/launch_server.py") for t in tokens[1:3]):
            return "server", None
    return None


def _int(text: str | None, default: int | None) -> int | None:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


def _role_of(kind: str, tokens: Sequence[str]) -> Role:
    if kind == "router":
        return "router"
    mode = flag_value(tokens, "--disaggregation-mode")
    return mode if mode in ("prefill", "decode") else "unified"  # type: ignore[return-value]


def _address(tokens: Sequence[str]) -> str:
    host = flag_value(tokens, "--host") or "127.0.0.1"
    if host == "::":
        return "::1"
    return "127.0.0.1" if host in ("0.0.0.0", "", "localhost") else host


def discover(
    ps: PsTable,
    declared: Sequence[ServiceSpec] = (),
    listen_pids: Mapping[int, set[int]] | None = None,
    now: float | None = None,
    listen_addresses: Mapping[int, str] | None = None,
) -> Discovery:
    """Services and their process trees; when services are declared only they belong."""
    now = time.time() if now is None else now
    rows = ps.by_pid()
    children: dict[int, list[int]] = {}
    for r in ps.rows:
        children.setdefault(r.ppid, []).append(r.pid)
    kinds = {r.pid: c for r in ps.rows if (c := classify(r.args)) is not None}
    # a root is a server/router whose parent is not itself an SGLang process
    roots = [pid for pid, (kind, _) in kinds.items()
             if kind in ("server", "router") and kinds.get(rows[pid].ppid, ("",))[0]
             not in ("server", "router")]

    def tree(root: int) -> list[int]:
        out, stack = [], [root]
        while stack:
            pid = stack.pop()
            out.append(pid)
            stack.extend(children.get(pid, []))
        return sorted(out)

    def service_from_root(root: int, spec: ServiceSpec | None) -> Service:
        kind = kinds[root][0]
        tokens = rows[root].args.split()
        port = _int(flag_value(tokens, "--port"), DEFAULT_SERVER_PORT) or DEFAULT_SERVER_PORT
        metrics_port = None
        if kind == "router":
            metrics_port = _int(flag_value(tokens, "--prometheus-port"),
                                DEFAULT_ROUTER_METRICS_PORT)
        if kind == "router" and spec is None and flag_value(tokens, "--port") is None:
            port, metrics_port = _hidden_router_ports(root, tree(root), listen_pids or {},
                                                      port, metrics_port)
        role = _role_of(kind, tokens)
        address = _address(tokens)
        if flag_value(tokens, "--host") is None and spec is not None:  # a title hid its flags
            address = (listen_addresses or {}).get(spec.port, address)
        return Service(
            role=spec.role if spec else role, kind=kind, port=spec.port if spec else port,
            address=address, root_pid=root, pids=tuple(tree(root)),
            metrics_port=(spec.metrics_port if spec and spec.metrics_port else metrics_port),
            unit=spec.unit if spec else None, log_file=spec.log_file if spec else None,
            declared=spec is not None,
            tp_size=_int(flag_value(tokens, "--tp-size") or flag_value(tokens, "--tp"), 1) or 1,
            dp_size=_int(flag_value(tokens, "--dp-size") or flag_value(tokens, "--dp"), 1) or 1,
            metrics_enabled=kind == "router" or has_flag(tokens, "--enable-metrics"),
            bootstrap_port=_int(flag_value(tokens, "--disaggregation-bootstrap-port"), None)
            if role == "prefill" else None,
        )

    services: list[Service] = []
    missing: list[str] = []
    if declared:
        for spec in declared:
            root = _root_for_port(spec.port, roots, rows, kinds, listen_pids or {})
            if root is None:
                missing.append(f"{spec.role}:{spec.port}")
                services.append(Service(
                    role=spec.role, kind="router" if spec.role == "router" else "server",
                    port=spec.port, address="127.0.0.1", root_pid=None, pids=(),
                    metrics_port=spec.metrics_port, unit=spec.unit, log_file=spec.log_file,
                    declared=True))
            else:
                services.append(service_from_root(root, spec))
    else:
        services = [service_from_root(root, None) for root in sorted(roots)]

    processes = []
    for svc in services:
        inferred = _untitled_ranks(svc, rows, children, kinds)
        for pid in svc.pids:
            row = rows[pid]
            kind, rank = inferred.get(pid) or kinds.get(pid, ("other", None))
            processes.append(_process(row, kind, rank, svc, now))
    return Discovery(tuple(processes), tuple(services), tuple(missing))


def _hidden_router_ports(root: int, pids: Sequence[int], listen_pids: Mapping[int, set[int]],
                         port: int, metrics_port: int | None) -> tuple[int, int | None]:
    """The HTTP and metrics ports of a router whose title hid its flags (smg's `smg::router`),
    from the ports its processes listen on: smg's defaults (30000, 29000) when it listens
    there, else the lower port is taken as HTTP and the next as metrics (a guess: declare the
    ports in the cluster file to be sure). Unchanged when it listens on fewer than two."""
    mine = sorted(p for p, owners in listen_pids.items() if owners & set(pids))
    if len(mine) < 2:
        return port, metrics_port
    http = DEFAULT_SERVER_PORT if DEFAULT_SERVER_PORT in mine else None
    metrics = DEFAULT_ROUTER_METRICS_PORT if DEFAULT_ROUTER_METRICS_PORT in mine else None
    rest = [p for p in mine if p not in (http, metrics)]
    http = http if http is not None else rest.pop(0)
    metrics = metrics if metrics is not None else (rest[0] if rest else None)
    return http, metrics


def _is_worker(row: PsRow, parent: PsRow) -> bool:
    """A child started for the server's work: a fork (its parent's command line) or a spawn."""
    if RESOURCE_TRACKER in row.args or FORKSERVER in row.args and parent.args != row.args:
        return False
    return row.args == parent.args or bool(SPAWN_CHILD.search(row.args))


def _untitled_ranks(svc: Service, rows: Mapping[int, PsRow], children: Mapping[int, list[int]],
                    kinds: Mapping[int, tuple[str, str | None]]) -> dict[int, tuple[str, str | None]]:
    """Scheduler ranks of a server whose processes carry no ``sglang::scheduler_*`` title:
    the server's worker children (forks or spawns), in start order. SGLang starts its ranks
    first (under a data-parallel controller when dp > 1) and the detokenizer last, so the
    last untitled worker is the detokenizer unless a titled one exists. {} when titles exist."""
    if svc.kind != "server" or svc.root_pid is None or svc.root_pid not in rows:
        return {}
    if any(kinds.get(pid, ("",))[0] == "scheduler" for pid in svc.pids):
        return {}  # titles present: they name the ranks
    root = rows[svc.root_pid]

    def workers(parent: int) -> list[int]:
        got: list[int] = []
        for c in children.get(parent, []):
            if c not in rows:
                continue
            if FORKSERVER in rows[c].args and FORKSERVER not in rows[parent].args:
                got.extend(workers(c))  # forkserver start method: workers are its children
            # untitled: a fork copy of the server classifies as "server", a spawn as nothing
            elif kinds.get(c, ("server", None))[0] == "server" and _is_worker(rows[c], rows[parent]):
                got.append(c)
        return sorted(got, key=lambda c: (-rows[c].elapsed_s, c))  # start order

    out: dict[int, tuple[str, str | None]] = {}
    top = workers(svc.root_pid)
    controllers = [c for c in top if workers(c)]
    tokens = root.args.split()
    tp = _int(flag_value(tokens, "--tp-size") or flag_value(tokens, "--tp"), 1) or 1
    if controllers:  # dp > 1: data-parallel controller -> dp x tp ranks
        ranks = [r for c in controllers for r in workers(c)]
        for c in controllers:
            out[c] = ("other", None)
        labels = [f"DP{i // tp}_TP{i % tp}" for i in range(len(ranks))]
        rest = [c for c in top if c not in controllers]
    else:
        nnodes = _int(flag_value(tokens, "--nnodes"), 1) or 1
        node = _int(flag_value(tokens, "--node-rank"), 0) or 0
        local = max(1, tp // nnodes)
        titled_detok = any(kinds.get(pid, ("",))[0] == "detokenizer" for pid in svc.pids)
        n = min(local, len(top) if titled_detok else max(0, len(top) - 1))
        ranks, rest = top[:n], top[n:]
        labels = [f"TP{node * local + i}" for i in range(n)]
    for pid, label in zip(ranks, labels, strict=False):
        out[pid] = ("scheduler", label)
    for pid in rest:
        out[pid] = ("other", None)
    return out


def _root_for_port(
    port: int, roots: Sequence[int], rows: Mapping[int, PsRow],
    kinds: Mapping[int, tuple[str, str | None]], listen_pids: Mapping[int, set[int]],
) -> int | None:
    for root in roots:
        tokens = rows[root].args.split()
        ports = {_int(flag_value(tokens, "--port"), DEFAULT_SERVER_PORT)}
        if kinds[root][0] == "router":
            ports.add(_int(flag_value(tokens, "--prometheus-port"), None))
        if port in ports:
            return root
    for pid in sorted(listen_pids.get(port, set())):
        seen = set()
        while pid in rows and pid not in seen:  # climb to the SGLang root
            seen.add(pid)
            if pid in roots:
                return pid
            pid = rows[pid].ppid
    return None


def _process(row: PsRow, kind: str, rank: str | None, svc: Service, now: float) -> ProcessInfo:
    return ProcessInfo(
        pid=row.pid, ppid=row.ppid, state=row.state, start_epoch=now - row.elapsed_s,
        threads=row.threads, rss_kb=row.rss_kb, args=row.args, kind=kind, role=svc.role,
        port=svc.port, rank=rank, root_pid=svc.root_pid,
    )
