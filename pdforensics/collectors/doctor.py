"""The few commands doctor adds to a light capture: one JSON fact sheet per host as the
login user (tools, sshd, clock, containers, py-spy's version), and one attach probe under
the capture's own privilege (`sudo -n` where the cluster file asks) that dumps a throwaway
Python process it starts and kills itself: the servers are never ptrace-stopped.

Both are single commands (a trusted `python3 -I -S -c SCRIPT`, as the versions collector
runs) that always exit 0 with a JSON line: what failed is in the JSON, not the exit code.
They are not in the registry (no parser, no view): doctor reads their JSON itself
(doctor/probes.py); the `doctor` profile and `snapshot --doctor` plan them."""

from __future__ import annotations

from pdforensics.collectors.base import CHEAP, KIB, SLOW, Source, Switch, Target
from pdforensics.model import HostSpec

TOOLS = ("timeout", "ss", "ps", "curl", "journalctl")

HOST_SCRIPT = (
    "import glob,json,os,shutil,subprocess,sys,time\n"
    "t0=time.time()\n"
    "pyspy,smi=sys.argv[1],sys.argv[2]\n"
    "out={'clock':t0,'uid':os.geteuid()}\n"
    "out['tools']={t:shutil.which(t) for t in " + repr(TOOLS) + "}\n"
    "out['py_spy']=shutil.which(pyspy)\n"
    "out['nvidia_smi']=shutil.which(smi)\n"
    "def rd(p):\n"
    "    try: return open(p,errors='replace').read()\n"
    "    except OSError: return None\n"
    "if out['py_spy']:\n"
    "    try:\n"
    "        r=subprocess.run([out['py_spy'],'--version'],capture_output=True,text=True,timeout=5)\n"
    "        out['py_spy_version']=(r.stdout or r.stderr).strip()[:200]\n"
    "    except Exception as e: out['py_spy_version_error']=str(e)[:200]\n"
    "out['ptrace_scope']=(rd('/proc/sys/kernel/yama/ptrace_scope') or '').strip() or None\n"
    "cg=rd('/proc/1/cgroup') or ''\n"
    "out['container']=[h for h,hit in (('/.dockerenv',os.path.exists('/.dockerenv')),"
    "('/run/.containerenv',os.path.exists('/run/.containerenv')),"
    "('cgroup',any(k in cg for k in ('docker','kubepods','containerd','libpod')))) if hit]\n"
    "conf='/etc/ssh/sshd_config'\n"
    "pid=os.getppid()\n"
    "for _ in range(8):\n"
    "    args=(rd('/proc/%d/cmdline'%pid) or '').split('\\0')\n"
    "    if args and os.path.basename(args[0]).startswith('sshd'):\n"
    "        if '-f' in args[:-1]: conf=args[args.index('-f')+1]\n"
    "        break\n"
    "    st=rd('/proc/%d/stat'%pid)\n"
    "    if not st: break\n"
    "    pid=int(st.rsplit(')',1)[1].split()[1])\n"
    "    if pid<=1: break\n"
    "out['sshd_config']=conf\n"
    "ms=None;readable=False\n"
    "for p in [conf]+sorted(glob.glob('/etc/ssh/sshd_config.d/*.conf')):\n"
    "    text=rd(p)\n"
    "    if text is None: continue\n"
    "    readable=readable or p==conf\n"
    "    for line in text.splitlines():\n"
    "        w=line.split()\n"
    "        if len(w)>=2 and w[0].lower()=='maxsessions' and ms is None: ms=w[1]\n"
    "out['sshd_readable']=readable\n"
    "out['max_sessions']=ms\n"
    "print(json.dumps(out))\n"
)

ATTACH_SCRIPT = (
    "import json,os,subprocess,sys,time\n"
    "pyspy=sys.argv[1]\n"
    "def rd(p):\n"
    "    try: return open(p,errors='replace').read()\n"
    "    except OSError: return None\n"
    "st=rd('/proc/self/status') or ''\n"
    "cap=next((l.split()[1] for l in st.splitlines() if l.startswith('CapEff:')),'0')\n"
    "out={'uid':os.geteuid(),'cap_sys_ptrace':bool(int(cap,16)>>19&1),\n"
    "     'ptrace_scope':(rd('/proc/sys/kernel/yama/ptrace_scope') or '').strip() or None}\n"
    "uids=set()\n"
    "for d in os.listdir('/proc'):\n"
    "    if not d.isdigit(): continue\n"
    "    c=rd('/proc/%s/cmdline'%d) or ''\n"
    "    if 'sglang' in c and 'python3 -I -S -c' not in c.replace('\\0',' '):\n"
    "        try: uids.add(os.stat('/proc/%s'%d).st_uid)\n"
    "        except OSError: pass\n"
    "out['server_uids']=sorted(uids)\n"
    "child=subprocess.Popen([sys.executable,'-I','-S','-c','import time\\nwhile True: time.sleep(1)'])\n"
    "try:\n"
    "    time.sleep(0.3)\n"
    "    for name,extra in (('dump',[]),('native',['--native'])):\n"
    "        try:\n"
    "            r=subprocess.run([pyspy,'dump',*extra,'--pid',str(child.pid)],\n"
    "                           capture_output=True,text=True,timeout=10)\n"
    "            out[name]={'rc':r.returncode,'err':(r.stderr or '').strip()[-300:],\n"
    "                       'ok':r.returncode==0 and 'Thread' in r.stdout}\n"
    "        except Exception as e: out[name]={'rc':None,'err':str(e)[:300],'ok':False}\n"
    "finally:\n"
    "    child.kill(); child.wait()\n"
    "print(json.dumps(out))\n"
)


def _host_argv(host: HostSpec, t: Target) -> tuple[str, ...]:
    return ("python3", "-I", "-S", "-c", HOST_SCRIPT, host.py_spy, host.nvidia_smi)


def _attach_argv(host: HostSpec, t: Target) -> tuple[str, ...]:
    return ("python3", "-I", "-S", "-c", ATTACH_SCRIPT, host.py_spy)


DOCTOR_HOST = Source(
    name="doctor_host", description="doctor: tools on PATH, ptrace scope, containers, sshd "
    "MaxSessions, clock, py-spy version (JSON, as the login user)", scope="host",
    build=_host_argv, timeout_s=10, max_bytes=64 * KIB, priority=CHEAP, parser=None,
    sample=None, extension="json", switch=Switch.DOCTOR)

DOCTOR_ATTACH = Source(
    name="doctor_attach", description="doctor: py-spy dump (and --native) of a throwaway "
    "process it starts and kills, under the capture's privilege (JSON)", scope="host",
    build=_attach_argv, timeout_s=25, max_bytes=64 * KIB, priority=SLOW, parser=None,
    sample=None, privileged=True, extension="json", switch=Switch.DOCTOR)

DOCTOR_GPU = Source(
    name="doctor_gpu", description="doctor: driver version and persistence mode per GPU "
    "(nvidia-smi, itself an NVML client)", scope="host",
    build=lambda host, t: (host.nvidia_smi, "--query-gpu=index,driver_version,persistence_mode",
                           "--format=csv,noheader"),
    timeout_s=15, max_bytes=64 * KIB, priority=SLOW, parser=None, sample=None, privileged=True,
    switch=Switch.DOCTOR)

PROBES = (DOCTOR_HOST, DOCTOR_ATTACH, DOCTOR_GPU)
PROBE_NAMES = frozenset(p.name for p in PROBES)
