#!/usr/bin/env python3
"""make_corpus.py OUTDIR — writes the seed corpus of the fuzz target (fuzz_request.cpp): requests
as a peer sends them (an empty delimiter, a MessagePack header, maybe a data frame), valid ones
with and without the secret, every operation, deep nesting, huge declared lengths, bad UTF-8.
Each input: frames, each a 4-byte little-endian length and its bytes. The operations come from
the table of requests (common/ops.h, PCM_OPS): a kind without a seed here is an error."""
import os
import re
import struct
import sys

OPS_H = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "common", "ops.h")


def op_names():
    """The wire names of PCM_OPS's rows, in order."""
    with open(OPS_H) as f:
        return re.findall(r'^\s*X\(\w+, "(\w+)"', f.read(), re.M)

SECRET = "fuzz-secret-0123456789abcdef"  # fuzz_request.cpp's kSecret


def pack(v):
    """A minimal MessagePack encoder: None, bool, int, float, str, bytes, list, dict."""
    if v is None:
        return b"\xc0"
    if v is True:
        return b"\xc3"
    if v is False:
        return b"\xc2"
    if isinstance(v, int):
        if 0 <= v < 128:
            return bytes([v])
        if -32 <= v < 0:
            return struct.pack("b", v)
        if v >= 0:
            return b"\xcf" + struct.pack(">Q", v)
        return b"\xd3" + struct.pack(">q", v)
    if isinstance(v, float):
        return b"\xcb" + struct.pack(">d", v)
    if isinstance(v, str):
        b = v.encode()
        if len(b) < 32:
            return bytes([0xA0 | len(b)]) + b
        return b"\xdb" + struct.pack(">I", len(b)) + b
    if isinstance(v, bytes):
        return b"\xc6" + struct.pack(">I", len(v)) + v
    if isinstance(v, list):
        return b"\xdd" + struct.pack(">I", len(v)) + b"".join(pack(x) for x in v)
    if isinstance(v, dict):
        return b"\xdf" + struct.pack(">I", len(v)) + b"".join(
            pack(k) + pack(x) for k, x in v.items())
    raise TypeError(type(v))


def frames(*fs):
    return b"".join(struct.pack("<I", len(f)) + f for f in fs)


def req(op, secret=SECRET, **fields):
    h = {"v": 1, "op": op}
    if secret is not None:
        h["secret"] = secret
    h.update(fields)
    return pack(h)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {}
    job = {"job": "fz"}
    hosts1 = {"size": 1, "hosts": ["localhost"]}
    doubles = struct.pack("<4d", 1.0, 2.0, 3.0, 4.0)
    seeds["ping"] = frames(b"", req("ping"))
    seeds["ping-no-delimiter"] = frames(req("ping"))
    seeds["ping-no-secret"] = frames(b"", req("ping", secret=None))
    seeds["ping-wrong-secret"] = frames(b"", req("ping", secret="wrong"))
    seeds["status"] = frames(b"", req("status"))
    seeds["status-job"] = frames(b"", req("status", **job))
    seeds["register"] = frames(b"", req("register", job="fz", **hosts1))
    seeds["register-anonymous"] = frames(b"", req("register", **hosts1, executable="/bin/true",
                                                  pid=1, placement="spread"))
    seeds["register-restart"] = frames(b"", req("register", job="fz", restart=True, **hosts1))
    seeds["poll"] = frames(b"", req("poll", iteration=3, **job))
    seeds["poll-checkpoints"] = frames(b"", req("poll", iteration=3, checkpoint_cost_s=0.5,
                                                checkpoint_interval_s=60.0,
                                                checkpoint_mtbf_s=3600.0, **job))
    seeds["store"] = frames(b"", req("store", rank=0, key="x", type=5, count=4, **job), doubles)
    seeds["store-piece"] = frames(b"", req("store", rank=0, key="x", type=5, count=8, xfer=1,
                                           total=64, offset=0, **job), doubles)
    seeds["load"] = frames(b"", req("load", rank=0, key="x", **job))
    seeds["load-meta"] = frames(b"", req("load", rank=0, key="x", meta_only=True, **job))
    seeds["load-version"] = frames(b"", req("load", rank=0, key="x", version=1, **job))
    seeds["commit"] = frames(b"", req("commit", iteration=1, size=1, **job))
    seeds["checkpoints"] = frames(b"", req("checkpoints", **job))
    seeds["verify"] = frames(b"", req("verify", iteration=1, **job))
    seeds["prune"] = frames(b"", req("prune", keep=1, **job))
    seeds["checkpoint-request"] = frames(b"", req("checkpoint_request", why="before a drain",
                                                **job))
    seeds["checkpoint-begin"] = frames(b"", req("checkpoint_begin", iteration=2, **job))
    seeds["shard-put"] = frames(b"", req("shard_put", iteration=2, rank=0, **job), b"\x89HDF")
    table = pack({"shards": [{"rank": 0, "file": "shard_0.h5", "size": 4, "datasets": []}]})
    seeds["checkpoint-commit"] = frames(b"", req("checkpoint_commit", iteration=2, size=1, **job),
                                        table)
    record = pack({"rank": 0, "file": "shard_0.h5", "size": 4, "datasets": []})
    seeds["shard-done"] = frames(b"", req("shard_done", iteration=2, rank=0, size=1, **job),
                                 record)
    seeds["shard-done-levels"] = frames(b"", req("shard_done", iteration=2, rank=0, size=1,
                                                 levels={"host": "h1", "partner": "h2",
                                                         "shared": False}, **job), record)
    seeds["shard-done-error"] = frames(b"", req("shard_done", iteration=2, rank=0, size=1,
                                                error="disk full", **job))
    seeds["checkpoint-bad"] = frames(b"", req("checkpoint_bad", iteration=2, why="x", **job))
    seeds["checkpoint-manifest"] = frames(b"", req("checkpoint_manifest", iteration=2, **job))
    seeds["direct-dir"] = frames(b"", req("direct_dir", **job))
    direct = {"rank": 0, "file": "", "size": 0,
              "datasets": [{"key": "x", "type": 5, "count": 8192, "offset": 2048, "xxh3": [1],
                            "file": "s0.x.0123456789abcdef.h5", "file_size": 67584}]}
    seeds["store-direct"] = frames(b"", req("store_direct", rank=0, key="x", record=direct, **job))
    seeds["store-direct-failed"] = frames(b"", req("store_direct", rank=0, key="x",
                                                   error="No space left on device", **job))
    seeds["stores-done"] = frames(b"", req("stores_done", iteration=2, rank=0, size=1, **job))
    seeds["stores-done-error"] = frames(b"", req("stores_done", iteration=2, rank=0, size=1,
                                                 error="disk full", **job))
    seeds["commit-after-stores"] = frames(b"", req("commit", iteration=2, size=1,
                                                   after_stores=True, **job))
    seeds["migrate"] = frames(b"", req("migrate", rank=0, host="nodeb", **job))
    seeds["split"] = frames(b"", req("split", rank=0, into=2, placement="spread", **job))
    seeds["merge"] = frames(b"", req("merge", ranks=[0, 1], **job))
    seeds["resize"] = frames(b"", req("resize", size=3, host="localhost", **job))
    seeds["reconfigured"] = frames(b"", req("reconfigured", command=1, success=True, size=2,
                                            hosts=["localhost", "nodeb"], pid=2, iteration=5,
                                            layout={"n": 8, "unit": 1, "kind": "block",
                                                    "size": 2}, **job))
    seeds["reconfigured-failed"] = frames(b"", req("reconfigured", command=1, success=False,
                                                   error="no\nway \u20ac", **job))
    seeds["finished"] = frames(b"", req("finished", iteration=9, **job))
    seeds["finished-error"] = frames(b"", req("finished", iteration=9,
                                              error="PCM_Adapt: MPI_Bcast failed", **job))
    seeds["job-event"] = frames(b"", req("job_event", text="recovery 1: \u20ac", **job))
    seeds["job-move"] = frames(b"", req("job_move", action="ask", site="b", **job))
    seeds["job-move-done"] = frames(b"", req("job_move", action="done", text="moved \u20ac", **job))
    seeds["host-add"] = frames(b"", req("host_add", host="nodec", slots=2, site="b",
                                        latency_ms=1))
    seeds["host-list"] = frames(b"", req("host_list"))
    seeds["host-drain"] = frames(b"", req("host_drain", host="nodeb"))
    seeds["host-remove"] = frames(b"", req("host_remove", host="nodec"))
    seeds["topology"] = frames(b"", req("topology", hosts=["localhost"], **job))
    seeds["profile"] = frames(b"", req("profile", **job))
    seeds["agent-report"] = frames(b"", req("agent_report", host="nodeb", cores=2, busy=0.5,
                                            load1=1.0, runnable=0.5, join=True))
    seeds["agent-leave"] = frames(b"", req("agent_leave", host="nodeb"))
    missing = [op for op in op_names() if op.replace("_", "-") not in seeds]
    if missing or not op_names():
        sys.exit(f"make_corpus: no seed for {missing or 'any op'} (common/ops.h)")
    # Hostile: nesting past the limit, lengths declared and absent, bad UTF-8, odd frame counts.
    deep = b"\x81\xa1k" + b"\x91" * 300 + b"\x01"
    seeds["deep-nesting"] = frames(b"", deep)
    seeds["deep-map"] = frames(b"", b"\x81\xa1k" + b"\x81\xa1k" * 100 + b"\x01")
    for name, body in {"str32": b"\xdb\xff\xff\xff\xff", "bin32": b"\xc6\x7f\xff\xff\xff",
                       "array32": b"\xdd\xff\xff\xff\xff", "map32": b"\xdf\xff\xff\xff\xff",
                       "ext32": b"\xc9\x00\x00\x10\x00\x01"}.items():
        seeds["huge-" + name] = frames(b"", b"\x81\xa1k" + body)
    seeds["huge-map-top"] = frames(b"", b"\xdf\xff\xff\xff\xff")
    seeds["utf8-op"] = frames(b"", b"\x83\xa1v\x01\xa2op\xa2\xc3\x28\xa6secret" +
                              pack(SECRET))
    seeds["utf8-job"] = frames(b"", b"\x84\xa1v\x01\xa2op\xa6status\xa6secret" + pack(SECRET) +
                               b"\xa3job\xa3\xed\xa0\x80")
    seeds["utf8-key"] = frames(b"", b"\x81\xa2\xff\xfek\xa1v")
    seeds["trailing-byte"] = frames(b"", req("ping") + b"\x00")
    seeds["not-a-map"] = frames(b"", pack([1, 2, 3]))
    seeds["too-many-frames"] = frames(b"", req("ping"), b"a", b"b")
    seeds["empty"] = b""
    seeds["only-delimiter"] = frames(b"")
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"make_corpus: {len(seeds)} inputs in {out}")


if __name__ == "__main__":
    main()
