"""The session runner's remote side: a trusted `python3 -I -S` program, sent on its stdin.

It runs for one capture on one host, in one exec channel, so the login shell (and whatever its
rc costs: conda or pyenv init is about 0.2 CPU-s) starts once per host instead of once per
command. It reads requests, one JSON object per line on stdin, and answers in frames on stdout:
a header ``<id> <kind> <length>\\n`` then <length> bytes.

Requests: ``{"i": id, "a": argv, "c": cap}`` runs argv (already wrapped in `timeout -k 2 S`,
and in `sudo -n` where the collector is privileged) with no shell, stdin /dev/null;
``{"i": id, "r": path, "c": cap, "t": 0|1}`` reads a regular file (the last cap bytes when t);
``{"i": id, "k": 1}`` ends a command (SIGTERM to its process group, pipes closed).

Frames: ``o`` stdout bytes (at most cap + 1 in all, so the reader sees the cap was passed), ``e``
stderr bytes (at most 64 KiB in all), ``x`` the exit (``<status>`` or ``s<signal>``); for a
read: ``o`` bytes of the window, then ``r <window start>`` (read), ``f <reason>`` (the file
could not be read) or ``n <octal st_mode>`` (not a regular file: never opened for reading
beyond the fstat, so a FIFO or a device cannot block or stream without end).
When stdin closes (the capture ended, the connection dropped) every command is killed.
"""

from __future__ import annotations

HELLO = b"PDFXRUN1"


def bootstrap(size: int) -> str:
    """The runner's `-c` program: read the runner script (size bytes) from stdin, then run it.
    The script does not travel in argv, so every `ps` on the host (ours included) shows a short
    line instead of 4 KB of Python; requests follow the script on the same stdin."""
    return ("import os\nb=b''\n"
            f"while len(b)<{size}:\n c=os.read(0,{size}-len(b))\n if not c:break\n b+=c\n"
            "exec(compile(b,'pdforensics-runner','exec'))")

RUNNER_SCRIPT = r"""
import errno,json,os,select,signal,stat,subprocess,sys,threading,time
out=sys.stdout.buffer;wl=threading.Lock();CH=65536;ERRCAP=65536;GRACE=2.0
def send(i,k,b=b''):
    with wl:
        out.write(b'%d %s %d\n'%(i,k,len(b))+b);out.flush()
def read(i,path,cap,tail):
    try:
        fd=os.open(path,os.O_RDONLY|os.O_NONBLOCK|os.O_NOCTTY)
    except OSError as e:
        send(i,b'f',(e.strerror or str(e)).encode());return
    try:
        st=os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            send(i,b'n',b'%o'%st.st_mode);return
        start=st.st_size-cap-1 if tail and st.st_size>cap else 0
        if start:os.lseek(fd,start,0)
        left=cap+1
        while left>0:
            c=os.read(fd,min(CH,left))
            if not c:break
            left-=len(c);send(i,b'o',c)
        send(i,b'r',b'%d'%start)
    except OSError as e:
        send(i,b'f',(e.strerror or str(e)).encode())
    finally:
        os.close(fd)
class Job:
    def __init__(s,i,p,cap):
        s.i,s.p,s.cap,s.sent,s.errsent,s.exited=i,p,cap,0,0,None
        s.fds={p.stdout.fileno():b'o',p.stderr.fileno():b'e'};s.files=[p.stdout,p.stderr]
    def shut(s):
        for f in s.files:f.close()
        s.fds={}
    def stop(s):
        try:os.killpg(s.p.pid,signal.SIGTERM)
        except OSError:pass
        s.shut()
jobs={};byfd={};inbuf=b'';stdin_open=True
def start(q):
    i=q['i']
    try:
        p=subprocess.Popen(q['a'],stdin=subprocess.DEVNULL,stdout=subprocess.PIPE,stderr=subprocess.PIPE,start_new_session=True)
    except OSError as e:
        send(i,b'e',('%s: %s\n'%(q['a'][0],'command not found' if e.errno==errno.ENOENT else e.strerror)).encode())
        send(i,b'x',b'127' if e.errno==errno.ENOENT else b'126');return
    j=Job(i,p,q['c']);jobs[i]=j
    for fd in j.fds:byfd[fd]=j
def request(line):
    q=json.loads(line)
    if 'a' in q:start(q)
    elif 'r' in q:threading.Thread(target=read,args=(q['i'],q['r'],q['c'],q.get('t')),daemon=True).start()
    elif q.get('k') and q['i'] in jobs:
        j=jobs[q['i']]
        for fd in list(j.fds):byfd.pop(fd,None)
        j.stop()
def pump(fd):
    j=byfd[fd];kind=j.fds[fd];c=os.read(fd,CH)
    if not c:
        byfd.pop(fd);del j.fds[fd];return
    if kind==b'o':
        c=c[:j.cap+1-j.sent];j.sent+=len(c);send(j.i,b'o',c)
        if j.sent>j.cap:
            for f in list(j.fds):byfd.pop(f,None)
            j.stop()
    elif j.errsent<ERRCAP:
        c=c[:ERRCAP-j.errsent];j.errsent+=len(c);send(j.i,b'e',c)
def reap():
    now=time.monotonic()
    for i,j in list(jobs.items()):
        if j.exited is None and j.p.poll() is not None:j.exited=now
        if j.exited is None:continue
        if j.fds and now-j.exited<GRACE:continue
        for fd in list(j.fds):byfd.pop(fd,None)
        j.shut();rc=j.p.returncode;del jobs[i]
        send(i,b'x',b'%d'%rc if rc>=0 else b's%d'%-rc)
def main():
    global inbuf,stdin_open
    send(0,b'h',b'PDFXRUN1 '+sys.argv[1].encode())
    while stdin_open or jobs:
        fds=([0] if stdin_open else [])+list(byfd)
        waiting=any(not j.fds for j in jobs.values()) or any(j.exited for j in jobs.values())
        r=select.select(fds,[],[],0.05 if waiting else 0.5)[0]
        for fd in r:
            if fd==0:
                c=os.read(0,CH)
                if not c:
                    stdin_open=False
                    for j in list(jobs.values()):j.stop()
                    os._exit(0)
                inbuf+=c
                while b'\n' in inbuf:
                    line,inbuf=inbuf.split(b'\n',1)
                    if line.strip():request(line)
            elif fd in byfd:pump(fd)
        reap()
try:main()
except (BrokenPipeError,OSError):
    for j in list(jobs.values()):j.stop()
os._exit(0)
"""
