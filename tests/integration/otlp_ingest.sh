#!/bin/sh
# otlp_ingest.sh: POST /v1development/profiles with requests written by an independent encoder
# (Python's protobuf package with the schema of tests/integration/otlp_schema.py, built from the
# specification's field numbers): protobuf, gzip and OTLP/JSON bodies; resource, profile and
# sample attributes as labels; cpu, off-CPU and allocation sample types; partial success for
# profiles the store cannot take; 400 with nothing stored for malformed requests; 415.
. tests/integration/server.inc

PY=/usr/bin/python3
$PY -c 'import google.protobuf' 2>/dev/null ||
	{ echo "SKIP: $PY has no google.protobuf (install python3-protobuf: make deps)"; exit 0; }
export PYTHONPATH=tests/integration

# Small body and inflation limits, so that an inflation bomb is cheap to make.
start_server --max-body 64KiB --limit inflated=256KiB

NOW=$(date +%s)
$PY - "$TMP" "$NOW" <<'EOF' || fail "cannot build the requests"
import sys, gzip
from google.protobuf import json_format
from otlp_schema import Builder, msg

tmp, now = sys.argv[1], int(sys.argv[2])
t0 = (now - 20) * 10**9

def shop_request(service):
    b = Builder()
    sp = b.resource({"service.name": service, "host.name": "h1", "container.id": "c0ffee",
                     "process.executable.name": "shopd", "deployment.environment": "prod",
                     "process.pid": 42})
    cpu = b.profile(sp, "samples", "count", "cpu", "nanoseconds", 1000000000 // 19, t0, 10 * 10**9)
    b.sample(cpu, ["main", "handle", "parse"], 30, {"thread.name": "worker", "process.pid": 42})
    b.sample(cpu, ["main", "handle", "render"], 10, {"thread.name": "worker"})
    b.sample(cpu, ["main", "idle"], 5, {"thread.name": "main"})
    alloc = b.profile(sp, "alloc_space", "bytes", "space", "bytes", 524288, t0, 10 * 10**9)
    b.sample(alloc, ["main", "alloc_buffers"], 4096)
    off = b.profile(sp, "events", "nanoseconds", None, None, 0, t0, 10 * 10**9)
    b.sample(off, ["main", "read"], 2000000)
    # Timestamps only: one event each.
    b.sample(off, ["main", "poll"], None, None, [t0 + 1, t0 + 2, t0 + 3])
    return b

# 1. The shop, plus an OTel-eBPF-profiler-like resource: no service.name on the resource, the
#    process on the samples, unsymbolized native frames on mappings with build ids, a kernel
#    frame, a location with an inlined call; and two profiles the store cannot take.
b = shop_request("shop")
sp = b.resource({"host.name": "h2"}, scope="otel-ebpf-profiler")
p = b.profile(sp, "samples", "count", "cpu", "nanoseconds", 50000000, t0, 5 * 10**9)
libc = b.mapping("/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f0000000000, 0x7f0000200000,
                 "c0ffee00c0ffee00c0ffee00c0ffee00c0ffee00")
exe = b.mapping("/usr/bin/batchjob", 0x400000, 0x500000, "0123456789abcdef0123456789abcdef01234567")
k = b.location(["do_syscall_64"], frame_type="kernel")
l1 = b.location([], mapping=libc, address=0x7f0000001000, frame_type="native")
l2 = b.location(["inlined_helper", "crunch"], mapping=exe, address=0x401234, frame_type="native", lines=[7, 42])
l3 = b.location(["main"], mapping=exe, address=0x400100, frame_type="native")
st = b.stack([k, l1, l2, l3])
for svc, v in (("sampled-svc", 7), ("sampled-svc", 3), (None, 11)):
    s = p.samples.add(stack_index=st)
    s.values.append(v)
    s.attribute_indices.append(b.attr("process.executable.name", "batchjob"))
    s.attribute_indices.append(b.attr("thread.name", "batch-worker", strindex=True))
    if svc:
        s.attribute_indices.append(b.attr("service.name", svc))
neg = b.profile(b.resource({"service.name": "negative"}), "samples", "count", "cpu", "nanoseconds", 1, t0)
b.sample(neg, ["main"], -5)
fut = b.profile(b.resource({"service.name": "future"}), "samples", "count", "cpu", "nanoseconds", 1,
                (now + 3 * 86400) * 10**9)
b.sample(fut, ["main"], 5)
open(tmp + "/shop.pb", "wb").write(b.req.SerializeToString())

# 2. The same shop as OTLP/JSON, and gzip-compressed protobuf, under other service names.
open(tmp + "/shop.json", "w").write(json_format.MessageToJson(shop_request("shop-json").req))
open(tmp + "/shop.pb.gz", "wb").write(gzip.compress(shop_request("shop-gzip").req.SerializeToString()))

# 3. Malformed: a stack index out of range next to a valid profile (nothing may be stored).
b = shop_request("atomic")
b.req.resource_profiles[0].scope_profiles[0].profiles[0].samples[0].stack_index = 999
open(tmp + "/bad-index.pb", "wb").write(b.req.SerializeToString())
data = shop_request("truncated").req.SerializeToString()
open(tmp + "/truncated.pb", "wb").write(data[: len(data) // 2])
open(tmp + "/bomb.pb.gz", "wb").write(gzip.compress(b"\0" * 1000000))
EOF

post() { # FILE CONTENT-TYPE [CURL-ARGS...]
	f=$1 ct=$2
	shift 2
	status_of $CURL_AUTH -H "Content-Type: $ct" --data-binary @"$f" "$@" "$URL/v1development/profiles"
}
decode_response() { # TYPE (ExportProfilesServiceResponse or Status) < body
	$PY -c "
import sys
from otlp_schema import msg
m = msg('$1')(); m.ParseFromString(sys.stdin.buffer.read()); print(m)"
}

# 1. Protobuf: 200 with partial success naming the two rejected profiles.
code=$(post $TMP/shop.pb application/x-protobuf)
[ "$code" = 200 ] || fail "protobuf request: HTTP $code: $(cat $TMP/body)"
decode_response ExportProfilesServiceResponse < $TMP/body > $TMP/resp.txt
grep -q 'rejected_profiles: 2' $TMP/resp.txt || fail "partial success: $(cat $TMP/resp.txt)"
grep -q 'error_message: "profile [0-9]*: negative sample value' $TMP/resp.txt || fail "partial success message: $(cat $TMP/resp.txt)"

# Every sample type is its own profile type, with its values.
[ "$(ticks 'shop.cpu')" = 45 ] || fail "shop.cpu total $(ticks 'shop.cpu'), want 45"
[ "$(ticks 'shop.alloc_space')" = 4096 ] || fail "shop.alloc_space $(ticks 'shop.alloc_space')"
[ "$(ticks 'shop.offcpu')" = 2000003 ] || fail "shop.offcpu $(ticks 'shop.offcpu'), want 2000003"
[ "$(ticks 'negative.cpu')" = 0 ] || fail "the rejected profile was stored"
[ "$(ticks 'future.cpu')" = 0 ] || fail "the future profile was stored"
# Resource attributes are labels under scorch's names; numeric ones (process.pid) are not.
[ "$(get /label-values label=host query=shop.cpu)" = '["h1"]' ] || fail "host: $(get /label-values label=host query=shop.cpu)"
[ "$(get /label-values label=container_id query=shop.cpu)" = '["c0ffee"]' ] || fail "container_id"
[ "$(get /label-values label=process query=shop.cpu)" = '["shopd"]' ] || fail "process"
[ "$(get /label-values label=deployment.environment query=shop.cpu)" = '["prod"]' ] || fail "deployment.environment"
get /labels > $TMP/labels.json
grep -q 'pid' $TMP/labels.json && fail "a pid became a label: $(cat $TMP/labels.json)"
# thread.name is the root frame, as comm is for pprof.
get /render query=shop.cpu format=folded | sort > $TMP/shop.folded
printf 'main;main;idle 5\nworker;main;handle;parse 30\nworker;main;handle;render 10\n' |
	diff - $TMP/shop.folded || fail "shop.cpu stacks"
get /render query=shop.offcpu format=folded | sort > $TMP/off.folded
printf 'main;poll 3\nmain;read 2000000\n' | diff - $TMP/off.folded || fail "offcpu stacks"
get /render query=shop.cpu > $TMP/fb.json
grep -q '"sampleRate":19' $TMP/fb.json || fail "sample rate from the period: $(cat $TMP/fb.json | head -c 600)"

# Sample-level service.name names the sample's app; without it the process does.
[ "$(ticks 'sampled-svc.cpu')" = 10 ] || fail "sampled-svc $(ticks 'sampled-svc.cpu')"
[ "$(ticks 'batchjob.cpu')" = 11 ] || fail "batchjob $(ticks 'batchjob.cpu')"
get /render query=batchjob.cpu format=folded > $TMP/batch.folded
echo 'batch-worker;main;crunch;inlined_helper;libc.so.6+0x1000;do_syscall_64_[k] 11' |
	diff - $TMP/batch.folded || fail "batchjob stacks (inlined, unsymbolized, kernel)"

# 2. JSON and gzip carry the same content.
code=$(post $TMP/shop.json application/json)
[ "$code" = 200 ] || fail "json request: HTTP $code: $(cat $TMP/body)"
[ "$(cat $TMP/body)" = '{}' ] || fail "json full success answer: $(cat $TMP/body)"
[ "$(ticks 'shop-json.cpu')" = 45 ] || fail "shop-json.cpu $(ticks 'shop-json.cpu')"
[ "$(ticks 'shop-json.offcpu')" = 2000003 ] || fail "shop-json.offcpu"
code=$(post $TMP/shop.pb.gz application/x-protobuf -H 'Content-Encoding: gzip')
[ "$code" = 200 ] || fail "gzip request: HTTP $code"
[ -s $TMP/body ] && fail "full success should be an empty message, got $(od -c $TMP/body | head -2)"
[ "$(ticks 'shop-gzip.alloc_space')" = 4096 ] || fail "shop-gzip"

# 3. Malformed requests: 400 with a google.rpc.Status naming the problem, nothing stored.
before=$(ticks '{}')
code=$(post $TMP/bad-index.pb application/x-protobuf)
[ "$code" = 400 ] || fail "bad index: HTTP $code"
decode_response Status < $TMP/body > $TMP/status.txt
grep -q 'stack index 999 out of range' $TMP/status.txt || fail "bad index message: $(cat $TMP/status.txt)"
[ "$(ticks 'atomic.alloc_space')" = 0 ] || fail "part of a malformed request was stored"
code=$(post $TMP/truncated.pb application/x-protobuf)
[ "$code" = 400 ] || fail "truncated: HTTP $code"
printf '{"resourceProfiles": [' > $TMP/bad.json
code=$(post $TMP/bad.json application/json)
[ "$code" = 400 ] || fail "bad json: HTTP $code"
grep -q '"message":"cannot decode OTLP/JSON' $TMP/body || fail "bad json message: $(cat $TMP/body)"
code=$(post $TMP/bomb.pb.gz application/x-protobuf -H 'Content-Encoding: gzip')
[ "$code" = 413 ] || fail "inflation bomb: HTTP $code"
decode_response Status < $TMP/body > $TMP/status.txt
grep -q 'cannot inflate the body' $TMP/status.txt || fail "bomb message: $(cat $TMP/status.txt)"
code=$(post $TMP/shop.pb text/plain)
[ "$code" = 415 ] || fail "unknown content type: HTTP $code"
code=$(post $TMP/shop.pb application/x-protobuf -H 'Content-Encoding: br')
[ "$code" = 415 ] || fail "unknown content encoding: HTTP $code"
[ "$(ticks '{}')" = "$before" ] || fail "a rejected request changed the store"

# Metrics count OTLP ingests with the others.
curl -s "$URL/metrics" | grep -q '^scorch_http_requests_total{route="/v1development/profiles",code="200"} 3' ||
	fail "metrics: $(curl -s "$URL/metrics" | grep v1development)"
echo "ok"
