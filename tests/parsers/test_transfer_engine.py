"""Mooncake and NIXL / UCX errors, each on the PD stage it breaks, cause or consequence."""

from __future__ import annotations

from pathlib import Path

from pdforensics.parsers.transfer_engine import read_transfer_errors

FIELD = Path(__file__).resolve().parent.parent / "data" / "field"
TE = FIELD / "transfer_engine"


def _errs(slug: str):  # type: ignore[no-untyped-def]
    return read_transfer_errors((TE / f"{slug}.log").read_text())


def test_a_failed_tcp_write_with_bad_address_is_a_kv_send_cause() -> None:
    (e,) = _errs("mooncake-602-tcp-writebody-bad-address-vram")
    assert (e.engine, e.kind, e.stage, e.label, e.detail) == ("mooncake", "write", "kv_send", "cause", "Bad address")
    assert "Session::writeBody failed. Error: Bad address (value: 14)" in e.text


def test_end_of_file_on_a_read_is_the_peer_going_away() -> None:
    errs = _errs("vllm-ascend-9747-tcp-writebody-readbody-eof")
    assert [(e.kind, e.label) for e in errs] == [("write", "cause"), ("read_eof", "consequence"),
                                                 ("write", "cause"), ("write", "cause")]


def test_rdma_slices_that_failed_name_the_peer_nic() -> None:
    errs = _errs("sglang-6854-mooncake-worker-pool-retry-exceeded")
    assert {e.detail for e in errs} == {"transport retry counter exceeded"}
    assert errs[0].peer == "10.0.0.2:15695@mlx5_5" and errs[0].kind == "rdma_completion"


def test_ucx_errors_and_a_caught_signal() -> None:
    errs = _errs("nixl-1983-ucx-srd-work-request-flushed")
    assert len(errs) == 3 and all(e.engine == "ucx" and e.label == "cause" for e in errs)
    (crash,) = _errs("sglang-6694-nixl-ucx-segv-tcp-ep")
    assert crash.kind == "crash" and crash.detail.startswith("signal 11: Segmentation fault")


def test_a_flushed_request_after_another_error_is_its_consequence() -> None:
    text = ((TE / "sglang-6854-mooncake-worker-pool-retry-exceeded.log").read_text()
            + (TE / "nixl-1983-ucx-srd-work-request-flushed.log").read_text())
    errs = read_transfer_errors(text)
    assert {e.label for e in errs if "Flushed" in e.detail} == {"consequence"}


def test_healthy_start_up_and_info_lines_are_no_error() -> None:
    for slug in ("mooncake-1115-store-client-startup-control", "mooncake-682-http-metadata-server-access-control",
                 "nixl-149-ucx-info-inter-node-cfg-control"):
        assert _errs(slug) == (), slug
    # the real SGLang 0.5.23 run on this machine prints this E line at every start, before its
    # own segment is registered (corpus: sglang_log/gen-sglang0523-*-startup-and-batches-control)
    start = ("I1204 15:54:31.392729 18139 transfer_engine_impl.cpp:183] Transfer Engine RPC using "
             "P2P handshake, listening on 192.0.2.2:15781\n"
             "E1204 15:54:31.392905 18139 transfer_metadata.cpp:1098] Local segment descriptor not found\n"
             "I1204 15:54:31.392944 18139 tcp_transport.cpp:391] TcpTransport: listen on port 16668\n")
    assert read_transfer_errors(start) == ()
