#!/bin/sh
# otlp_export.sh: `scorch agent --otlp-endpoint` with real BPF, alongside --server: the requests a
# test sink receives, decoded by the independent schema of otlp_schema.py, carry the resource
# attributes, thread and pid attributes, frames with their types, the profiled binary's mapping
# with its file name and GNU build id, and the same samples the scorch server got; the agent
# counts a partial success the receiver answers.
. tests/integration/server.inc
need_bpf

PY=/usr/bin/python3
$PY -c 'import google.protobuf' 2>/dev/null ||
	{ echo "SKIP: $PY has no google.protobuf (install python3-protobuf: make deps)"; exit 0; }
export PYTHONPATH=tests/integration
command -v readelf >/dev/null 2>&1 || { echo "SKIP: readelf is not installed"; exit 0; }

start_server
mkdir -p $TMP/sink
$PY tests/integration/otlp_sink.py $TMP/sink 2>$TMP/sink.log &
SINK_PID=$!
trap 'kill -9 $SINK_PID $SRV_PID 2>/dev/null; rm -rf "$TMP"' EXIT INT TERM
i=0
until [ -s $TMP/sink/port ]; do
	i=$((i + 1)); [ $i -gt 100 ] && fail "the sink did not start: $(cat $TMP/sink.log)"
	sleep 0.1
done
SINK="http://127.0.0.1:$(cat $TMP/sink/port)"

"$B/helpers/fp_hot" 5 &
hot=$!
$SCORCH -v agent --server "$URL" --otlp-endpoint "$SINK" -F 99 --interval 1s -d 4 --label env=test \
	--cache-dir "$TMP/tables" 2> $TMP/agent.log || fail "agent exited $?: $(tail -5 $TMP/agent.log)"
wait $hot
kill $SINK_PID 2>/dev/null; wait $SINK_PID 2>/dev/null

ls $TMP/sink/req-*.bin >/dev/null 2>&1 || fail "the sink received nothing: $(tail -5 $TMP/agent.log)"
grep -q '^path: /v1development/profiles$' $TMP/sink/req-1.hdr || fail "request path: $(cat $TMP/sink/req-1.hdr)"
grep -q '^content-type: application/x-protobuf$' $TMP/sink/req-1.hdr || fail "content type: $(cat $TMP/sink/req-1.hdr)"
grep -q '^content-encoding: gzip$' $TMP/sink/req-1.hdr || fail "not gzip by default: $(cat $TMP/sink/req-1.hdr)"
grep -q '1 profiles refused by the receiver' $TMP/agent.log || fail "partial success not counted: $(grep otlp $TMP/agent.log | tail -3)"
grep -q 'receiver: sink test rejection' $TMP/agent.log || fail "partial success message not reported: $(grep otlp $TMP/agent.log | tail -3)"

build_id=$(readelf -n "$B/helpers/fp_hot" | sed -n 's/.*Build ID: *//p')
[ -n "$build_id" ] || fail "fp_hot has no build id"
$PY - "$TMP/sink" "$build_id" "$(hostname)" > $TMP/summary.txt 2>&1 <<'PYEOF' || fail "decoding the agent's requests: $(cat $TMP/summary.txt)"
import glob, gzip, sys
from otlp_schema import msg

sink, build_id, host = sys.argv[1:4]
total, hot, cold, stacks = 0, 0, 0, set()
seen = {"thread.name": 0, "process.pid": 0, "build_id": 0, "frame.type": set()}
for path in sorted(glob.glob(sink + "/req-*.bin")):
    data = open(path, "rb").read()
    req = msg("ExportProfilesServiceRequest")()
    req.ParseFromString(gzip.decompress(data))
    d = req.dictionary
    S = d.string_table
    assert S[0] == "", "string_table[0] must be empty"
    for table in (d.mapping_table, d.location_table, d.function_table, d.attribute_table, d.stack_table):
        assert len(table) and table[0].ByteSize() == 0, "index 0 must be the zero value"
    def attr(i):
        a = d.attribute_table[i]
        v = a.value
        return S[a.key_strindex], (v.string_value if v.WhichOneof("value") == "string_value" else v.int_value)
    for rp in req.resource_profiles:
        ra = {kv.key: kv.value.string_value for kv in rp.resource.attributes}
        assert rp.scope_profiles[0].scope.name == "scorch", rp.scope_profiles[0].scope
        for p in rp.scope_profiles[0].profiles:
            assert (S[p.sample_type.type_strindex], S[p.sample_type.unit_strindex]) == ("samples", "count")
            assert (S[p.period_type.type_strindex], S[p.period_type.unit_strindex]) == ("cpu", "nanoseconds")
            assert p.period == 1000000000 // 99, p.period
            assert p.time_unix_nano > 1600000000 * 10**9 and p.duration_nano > 0
            for s in p.samples:
                v = sum(s.values)
                total += v
                attrs = dict(attr(i) for i in s.attribute_indices)
                seen["thread.name"] += "thread.name" in attrs
                seen["process.pid"] += isinstance(attrs.get("process.pid"), int) and attrs["process.pid"] > 0
                names = []
                for li in d.stack_table[s.stack_index].location_indices:
                    loc = d.location_table[li]
                    for a in loc.attribute_indices:
                        k, t = attr(a)
                        if k == "profile.frame.type":
                            seen["frame.type"].add(t)
                    if loc.mapping_index:
                        m = d.mapping_table[loc.mapping_index]
                        if S[m.filename_strindex].endswith("/fp_hot"):
                            for a in m.attribute_indices:
                                if attr(a) == ("process.executable.build_id.gnu", build_id):
                                    seen["build_id"] += 1
                    for line in loc.lines:
                        names.append(S[d.function_table[line.function_index].name_strindex])
                chain = ";".join(reversed(names))
                if ra.get("service.name") == "fp_hot":
                    assert ra.get("host.name") == host, ra
                    assert ra.get("process.executable.name") == "fp_hot", ra
                    assert ra.get("env") == "test", ra
                    stacks.add(chain)
                    if "main;run;hot_function" in chain:
                        hot += v
                    elif "main;run;cold_function" in chain:
                        cold += v
print("total", total)
print("fp_hot hot", hot, "cold", cold)
print("seen", seen)
assert hot > 0 and cold > 0, "no main;run;hot_function / cold_function stacks: %s" % sorted(stacks)[:5]
assert hot > cold
assert seen["thread.name"] and seen["process.pid"], seen
assert seen["build_id"], "no fp_hot mapping with its GNU build id"
assert {"native", "kernel"} <= seen["frame.type"], seen
PYEOF
cat $TMP/summary.txt
otlp_total=$(sed -n 's/^total //p' $TMP/summary.txt)
taken=$(sed -n 's/.*agent: stopped: \([0-9]*\) samples.*/\1/p' $TMP/agent.log)
stored=$(ticks '{}')
echo "samples taken: $taken, sent as OTLP: $otlp_total, at the scorch server: $stored"
[ "$otlp_total" = "$taken" ] || fail "OTLP carried $otlp_total samples of the $taken taken"
[ "$stored" = "$taken" ] || fail "the server has $stored samples of the $taken taken"
stop_server

# The same requests, as sent, into scorch's own OTLP receiver: the same samples and services.
DATA=$TMP/data2
start_server
for f in $TMP/sink/req-*.bin; do
	code=$(status_of -H 'Content-Type: application/x-protobuf' -H 'Content-Encoding: gzip' \
		--data-binary @"$f" "$URL/v1development/profiles")
	[ "$code" = 200 ] || fail "scorch's receiver refused $f: HTTP $code"
done
stored=$(ticks '{}')
echo "through scorch's OTLP receiver: $stored"
[ "$stored" = "$taken" ] || fail "scorch's OTLP receiver stored $stored samples of the $taken taken"
[ "$(ticks 'fp_hot.cpu{env="test"}')" -gt 0 ] || fail "no fp_hot series with env=test through OTLP"
get /render query='fp_hot.cpu{}' format=folded | grep -q 'main;run;hot_function [0-9]*$' ||
	fail "no main;run;hot_function stack through OTLP"
echo ok
