import threading, time, hashlib
def forward_batch(n):
    h = hashlib.sha256()
    for i in range(n):
        h.update(i.to_bytes(8, "little"))
    return h.digest()
def event_loop():
    while True:
        forward_batch(20000)
        time.sleep(0.01)
def detokenize_loop():
    while True:
        time.sleep(0.05)
threading.Thread(target=detokenize_loop, name="detok", daemon=True).start()
event_loop()
