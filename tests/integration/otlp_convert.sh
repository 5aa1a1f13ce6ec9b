#!/bin/sh
# otlp_convert.sh: scorch convert between pprof, folded and OTLP: a profile through OTLP and back
# keeps its stacks and values, OTLP and pprof agree on totals, and a converted .otlp file is
# accepted by the server's OTLP receiver with the same totals.
. tests/integration/server.inc

printf 'app;main;handle;parse 30\napp;main;handle;render 10\napp;main;idle 5\nworker;run;crunch 1234567\n' > $TMP/a.folded
"$SCORCH" convert $TMP/a.folded $TMP/a.otlp || fail "folded -> otlp"
"$SCORCH" convert $TMP/a.otlp $TMP/b.folded || fail "otlp -> folded"
sort $TMP/a.folded | diff - $TMP/b.folded || fail "folded -> otlp -> folded changed the profile"
"$SCORCH" convert $TMP/a.folded $TMP/a.pb.gz || fail "folded -> pprof"
"$SCORCH" convert -t shop $TMP/a.pb.gz $TMP/c.otlp || fail "pprof -> otlp"
"$SCORCH" convert $TMP/c.otlp $TMP/c.pb.gz || fail "otlp -> pprof"
"$SCORCH" convert $TMP/c.pb.gz $TMP/c.folded || fail "pprof -> folded"
sort $TMP/a.folded | diff - $TMP/c.folded || fail "pprof -> otlp -> pprof changed the profile"
gzip -c $TMP/c.otlp > $TMP/c.otlp.gz
"$SCORCH" convert $TMP/c.otlp.gz - -f folded | diff $TMP/c.folded - || fail "gzip otlp input"
printf 'not a profile\001' > $TMP/bad.bin
"$SCORCH" convert $TMP/bad.bin $TMP/x.folded 2> $TMP/err.txt && fail "garbage converted"
grep -q "cannot read" $TMP/err.txt || fail "garbage message: $(cat $TMP/err.txt)"

start_server
code=$(status_of -H 'Content-Type: application/x-protobuf' --data-binary @$TMP/c.otlp "$URL/v1development/profiles")
[ "$code" = 200 ] || fail "posting a converted .otlp: HTTP $code: $(cat $TMP/body)"
# The title (-t, else the file name) is the resource's service.name; folded is a cpu profile.
[ "$(ticks 'shop.cpu')" = "$(total_count $TMP/a.folded)" ] || fail "server total $(ticks 'shop.cpu'), want $(total_count $TMP/a.folded)"
get /render query=shop.cpu format=folded | sort | diff $TMP/c.folded - || fail "server stacks"
echo ok
