import socket, threading, time
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
cli = socket.create_connection(srv.getsockname()); conn, _ = srv.accept()
lock = threading.Lock(); lock.acquire()
def wait_for_kv():
    conn.recv(4096)            # peer never sends
def transfer_worker():
    with lock:                 # never released
        pass
def heartbeat():
    while True:
        time.sleep(5)
threading.Thread(target=wait_for_kv, name="kv-recv").start()
threading.Thread(target=transfer_worker, name="transfer-worker").start()
threading.Thread(target=heartbeat, name="heartbeat", daemon=True).start()
time.sleep(600)
