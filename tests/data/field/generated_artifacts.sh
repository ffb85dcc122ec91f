set -x
PS=/work/wt/stacks/.venv/bin/py-spy
python3 -c '
import threading, time, queue
def worker(q, n):
    item = q.get()
q = queue.Queue()
for i in range(2):
    threading.Thread(target=worker, args=(q, i), name=f"worker-{i}").start()
def main_loop(limit=3600):
    deadline = time.time() + limit
    time.sleep(limit)
main_loop()
' &
P=$!
sleep 1.5
$PS dump --locals --pid $P > pyspy_locals_multiline.txt 2>&1; echo "rc=$?"
$PS dump --json --pid $P > pyspy_json.json 2>&1; echo "rc=$?"
/tmp/stk/psenv/bin/pystack remote --native $P > pystack_native.txt 2>&1; echo "rc=$?"
sleep 300 & S=$!
$PS dump --pid $S > err_not_python.txt 2>&1; echo "rc=$?"
runuser -u nobody -- $PS dump --pid $P > err_permission.txt 2>&1; echo "rc=$?"
kill $P $S; wait $P $S 2>/dev/null
$PS dump --pid $P > err_no_process.txt 2>&1; echo "rc=$?"
python3 -X faulthandler -c '
import faulthandler, threading, time, sys
ev = threading.Event()
def poller():
    ev.wait()
threading.Thread(target=poller, name="poller", daemon=True).start()
faulthandler.dump_traceback_later(1, exit=True)
def wait_for_peer():
    time.sleep(5)
wait_for_peer()
' > fh_timeout.txt 2>&1; echo "rc=$?"
python3 -c '
class KVTransferError(Exception):
    pass
def poll(room):
    raise TimeoutError(f"bootstrap room {room} timed out")
def transfer(room):
    try:
        poll(room)
    except TimeoutError as exc:
        raise KVTransferError("transfer failed") from exc
transfer(7)
' > tb_chained.txt 2>&1; echo "rc=$?"
python3 -c '
def check(i):
    raise ValueError(f"rank {i} not ready")
def gather():
    errors = []
    for i in range(2):
        try:
            check(i)
        except ValueError as e:
            errors.append(e)
    raise ExceptionGroup("ranks failed", errors)
gather()
' > tb_group.txt 2>&1; echo "rc=$?"
python3 --version; /tmp/stk/psenv/bin/pystack --version
