"""Versions: the server interpreter's packages, kernel."""

from __future__ import annotations

from pdforensics.collectors.base import MIB, NORMAL, SLOW, Runs, Source, Switch, Target, register
from pdforensics.collectors.feeds import CAPTURE_LEVEL, Feed, first_ok_dict, first_ok_line
from pdforensics.model import HostSpec

# The server's interpreter is never run: its path comes from the host's own `ps`, and a
# process anyone can start may name any binary (under sudo that would be root code). A
# trusted `python3 -I -S` reads the distributions of that interpreter's prefix (a venv keeps
# its bin/ symlink, so argv[0] is used before /proc/PID/exe), in pip-freeze format. It reads
# the Name and Version headers of each *.dist-info/METADATA and *.egg-info itself instead of
# importing importlib.metadata (email, zipfile, csv...): 15 ms of target CPU instead of ~100.
FREEZE_SCRIPT = (
    "import os,sys\n"
    "argv0,pid=sys.argv[1],sys.argv[2]\n"
    "exe=argv0 if os.path.isabs(argv0) else os.path.realpath('/proc/%s/exe'%pid)\n"
    "pre=os.path.dirname(os.path.dirname(exe))\n"
    "def ls(d):\n"
    "    try: return sorted(os.listdir(d))\n"
    "    except OSError: return []\n"
    "py=lambda d:[os.path.join(d,v) for v in ls(d) if v.startswith('python3')]\n"
    "dirs=[os.path.join(v,s) for v in py(os.path.join(pre,'lib')) for s in ('site-packages','dist-packages')]\n"
    "dirs+=[os.path.join(pre,'lib','python3','dist-packages')]\n"
    "dirs+=[os.path.join(v,'dist-packages') for v in py(os.path.join(pre,'local','lib'))]\n"
    "dirs=[d for d in dirs if os.path.isdir(d)]\n"
    "if not dirs: sys.exit('no site-packages under %s'%pre)\n"
    "def meta(p):\n"
    "    h={}\n"
    "    try:\n"
    "        with open(p,encoding='utf-8',errors='replace') as f:\n"
    "            for line in f:\n"
    "                if not line.strip(): break\n"
    "                k,_,v=line.partition(':')\n"
    "                if k in ('Name','Version') and k not in h: h[k]=v.strip()\n"
    "    except OSError: pass\n"
    "    return h\n"
    "found=[]\n"
    "for d in dirs:\n"
    "    for e in ls(d):\n"
    "        p=os.path.join(d,e)\n"
    "        if e.endswith('.dist-info'): h=meta(os.path.join(p,'METADATA'))\n"
    "        elif e.endswith('.egg-info'): h=meta(os.path.join(p,'PKG-INFO') if os.path.isdir(p) else p)\n"
    "        else: continue\n"
    "        if h.get('Name'): found.append((h['Name'],h.get('Version','')))\n"
    "seen=set()\n"
    "for n,v in sorted(found,key=lambda x:x[0].lower()):\n"
    "    if n.lower() not in seen:\n"
    "        seen.add(n.lower()); print(f'{n}=={v}')\n"
)


def _python(t: Target) -> str:
    assert t.process is not None
    first = t.process.args.split()[0] if t.process.args.split() else "python3"
    return first if "python" in first.rsplit("/", 1)[-1] else "python3"


def _is_server(t: Target) -> bool:
    return t.process is not None and t.process.kind == "server"


def _interpreter(t: Target) -> str:
    """What a server runs as (its argv[0]): its packages are read once per interpreter."""
    assert t.process is not None
    return t.process.args.split()[0] if t.process.args.split() else ""


def build_freeze(host: HostSpec, t: Target) -> tuple[str, ...]:
    assert t.process is not None
    return ("python3", "-I", "-S", "-c", FREEZE_SCRIPT, _python(t), str(t.process.pid))


PIP_FREEZE = register(Source(
    name="pip_freeze", description="packages of the server's own interpreter (pip freeze form)",
    scope="process", build=build_freeze,
    timeout_s=15, max_bytes=2 * MIB, priority=SLOW, parser="versions:parse_pip_freeze",
    sample="pip_freeze_sglang_host.txt", privileged=True,  # the service's venv is often not ours to read
    feeds=Feed("host.packages", first_ok_dict), runs=Runs.PER_PROCESS, switch=Switch.VERSIONS,
    only=lambda host, d, t: _is_server(t), once_per=_interpreter, config=True,
))

UNAME = register(Source(
    name="uname", description="kernel version", scope="host",
    build=lambda host, t: ("uname", "-a"), timeout_s=5, max_bytes=64 * 1024, priority=NORMAL,
    parser="versions:parse_uname", sample="pip_uname_a.txt", feeds=Feed("host.uname", first_ok_line),
    switch=Switch.VERSIONS, config=True,
))

# The catalog-relevant part of the server's own sglang package (flags, env vars, metric
# declarations), as JSON lines {"path", "text"} after a header line: redaction-safe text that
# `pdforensics catalog build --from BUNDLE` reads. Same trust rule as FREEZE_SCRIPT: a trusted
# `python3 -I` that only reads files; the package is looked up on the server's PYTHONPATH
# (from /proc/PID/environ) and in its interpreter prefix, never imported.
SOURCE_SCRIPT = (
    "import glob,json,os,re,sys\n"
    "argv0,pid=sys.argv[1],sys.argv[2]\n"
    "exe=argv0 if os.path.isabs(argv0) else os.path.realpath('/proc/%s/exe'%pid)\n"
    "pre=os.path.dirname(os.path.dirname(exe))\n"
    "env=open('/proc/%s/environ'%pid,'rb').read().split(b'\\0')\n"
    "pp=[v[11:].decode('utf-8','replace') for v in env if v.startswith(b'PYTHONPATH=')]\n"
    "dirs=[d for p in pp for d in p.split(':') if d]\n"
    "dirs+=sorted(glob.glob(os.path.join(pre,'lib/python3*/*-packages')))\n"
    "dirs+=sorted(glob.glob(os.path.join(pre,'local/lib/python3*/dist-packages')))\n"
    "ok=lambda d: os.path.isfile(os.path.join(d,'sglang','srt','server_args.py'))\n"
    "pkg=next((os.path.join(d,'sglang') for d in dirs if ok(d)),None)\n"
    "if pkg is None: sys.exit('no sglang package with srt/server_args.py in %s'%dirs)\n"
    "ver=None\n"
    "for m in sorted(glob.glob(os.path.join(os.path.dirname(pkg),'sglang-*.dist-info','METADATA'))):\n"
    "    v=re.search(r'^Version:\\s*(\\S+)',open(m,errors='replace').read(),re.M); ver=ver or (v and v.group(1))\n"
    "hints=('prometheus_client','Gauge(','Histogram(','Summary(','documentation=')\n"
    "print(json.dumps({'package':pkg,'metadata_version':ver}))\n"
    "for root,_,files in os.walk(pkg):\n"
    "    for f in sorted(files):\n"
    "        if not f.endswith('.py'): continue\n"
    "        p=os.path.join(root,f); rel=os.path.relpath(p,pkg)\n"
    "        t=open(p,encoding='utf-8',errors='replace').read()\n"
    "        keep=rel in ('__init__.py','version.py','_version.py','srt/server_args.py','srt/environ.py')\n"
    "        if keep or rel.startswith('srt/arg_groups/') or (rel.startswith('srt/') and any(h in t for h in hints)):\n"
    "            print(json.dumps({'path':rel,'text':t}))\n"
)


def build_source(host: HostSpec, t: Target) -> tuple[str, ...]:
    assert t.process is not None
    return ("python3", "-I", "-c", SOURCE_SCRIPT, _python(t), str(t.process.pid))


SGLANG_SOURCE = register(Source(
    name="sglang_source", description="the server's own sglang source files the catalog reads "
    "(--with-sglang-source; JSON lines)", scope="process", build=build_source,
    timeout_s=20, max_bytes=64 * MIB, priority=SLOW, parser="versions:parse_sglang_source",
    sample="sglang_source_lab.jsonl", privileged=True, extension="jsonl",
    feeds=Feed(f"{CAPTURE_LEVEL}.sglang_source"),  # read by `catalog build --from BUNDLE`
    runs=Runs.PER_PROCESS, switch=Switch.SGLANG_SOURCE, only=lambda host, d, t: _is_server(t),
    once_per=_interpreter,
))
