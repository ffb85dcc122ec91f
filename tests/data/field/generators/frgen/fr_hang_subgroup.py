# 2-process gloo group; rank 1 skips the 4th all_reduce, so rank 0 waits in it.
# Each rank writes its own Flight Recorder dump (json and pickle) from a side thread.
import os, sys, threading, time, datetime
import torch, torch.distributed as dist
import torch._C._distributed_c10d as c10d

def dump(rank, tag):
    with open(f"sub_rank{rank}_{tag}.json", "wb") as f:
        f.write(c10d._dump_fr_trace_json())
    with open(f"sub_rank{rank}_{tag}.pkl", "wb") as f:
        f.write(c10d._dump_fr_trace())

def main(rank):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:29534", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=20))
    t = torch.ones(4); g = dist.new_group([0, 1], group_desc="tp_group")
    for _ in range(3):
        dist.all_reduce(t, group=g)
    dist.broadcast(t, src=0, group=g)
    threading.Timer(5.0, dump, args=(rank, "hung")).start()
    if rank == 0:
        try:
            dist.all_reduce(t, group=g)          # rank 1 never joins this one
        except Exception as e:
            print(f"rank0: {type(e).__name__}: {e}", flush=True)
    else:
        time.sleep(30)
    time.sleep(1)
    print(f"rank{rank} done", flush=True)
    os._exit(0)

if __name__ == "__main__":
    main(int(sys.argv[1]))
