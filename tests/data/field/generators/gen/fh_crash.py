import ctypes, faulthandler, threading, time, queue
faulthandler.enable()
q = queue.Queue()
def detokenizer_loop():
    q.get()                      # idle: waits for work forever
def heartbeat():
    while True:
        time.sleep(1)
threading.Thread(target=detokenizer_loop, name="detokenizer", daemon=True).start()
threading.Thread(target=heartbeat, name="heartbeat", daemon=True).start()
time.sleep(0.5)
def copy_kv_block():
    ctypes.string_at(0)          # reads address 0: SIGSEGV
copy_kv_block()
