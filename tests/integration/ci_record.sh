#!/bin/sh
# scorch ci -- CMD: the command's exit status, the labels a CI environment gives (GitHub
# Actions, GitLab CI) and the explicit ones that win, upload to a real server and -o, what
# happens when the upload fails (profile kept, exit status), --best-effort without BPF, and
# argument errors.
. tests/integration/server.inc
need_bpf

WORK=$B/helpers/ci_work
[ -x "$WORK" ] || fail "no $WORK (make test-build)"
start_server

# The environment GitHub Actions gives a pull request's job (and nothing of other CIs).
github() {
	env -u GITLAB_CI -u JENKINS_URL -u CIRCLECI -u BUILDKITE \
		GITHUB_ACTIONS=true GITHUB_SHA=0123abcd GITHUB_REF=refs/pull/42/merge \
		GITHUB_HEAD_REF=feature/fast GITHUB_REF_NAME=42/merge GITHUB_JOB=unit \
		RUNNER_NAME="GitHub Actions 3" GITHUB_RUN_ID=777 GITHUB_REPOSITORY=acme/widget "$@"
}

# 1. Exit status of the command, labels from the environment, app from the repository.
github $SCORCH ci -F 999 --server "$URL" -- sh -c "$WORK 0.2; exit 5" 2> $TMP/ci1.err
rc=$?
[ $rc -eq 5 ] || fail "exit status $rc, expected the command's 5: $(cat $TMP/ci1.err)"
grep -q "uploaded to $URL as widget.cpu{run=" $TMP/ci1.err || fail "no upload line: $(cat $TMP/ci1.err)"
for kv in ci=github commit=0123abcd branch=feature/fast job=unit "runner=GitHub Actions 3" \
	  pipeline=777 pr=42; do
	k=${kv%%=*} v=${kv#*=}
	got=$(get /label-values label=$k query=widget.cpu)
	[ "$got" = "[\"$v\"]" ] || fail "label $k: $got, expected [\"$v\"]"
done
run=$(get /label-values label=run query=widget.cpu)
echo "$run" | grep -Eq '^\["[0-9]{8}T[0-9]{6}Z-[0-9a-f]{6}"\]$' || fail "run label: $run"
n=$(ticks 'widget.cpu{commit="0123abcd"}')
[ "${n:-0}" -ge 50 ] || fail "only ${n:-0} samples uploaded"
get /render query=widget.cpu format=folded | grep -q '^ci_work;.*checksum ' || fail "no ci_work stacks on the server"

# 2. Explicit labels win; K= drops one; --app names the application.
github $SCORCH ci -q -F 999 --server "$URL" --app other --label commit=override --label pr= \
	--label suite=unit -- "$WORK" 0.1 || fail "second run exited $?"
[ "$(get /label-values label=commit query=other.cpu)" = '["override"]' ] || fail "explicit commit"
[ "$(get /label-values label=suite query=other.cpu)" = '["unit"]' ] || fail "extra label"
[ "$(get /label-values label=pr query=other.cpu)" = '[]' ] || fail "pr= did not drop: $(get /label-values label=pr query=other.cpu)"

# 3. GitLab, written to a file: the labels travel inside the pprof.
env -u GITHUB_ACTIONS GITLAB_CI=true CI_COMMIT_SHA=feedbeef CI_COMMIT_REF_NAME=main \
	CI_JOB_NAME=test CI_PIPELINE_ID=99 CI_PROJECT_PATH=group/proj \
	$SCORCH ci -q -F 999 -o $TMP/gl.pb.gz -- "$WORK" 0.1 || fail "gitlab run exited $?"
code=$(status_of --data-binary @$TMP/gl.pb.gz --url-query 'name=fromfile.cpu' "$URL/ingest?format=pprof")
[ "$code" = 200 ] || fail "ingest of the written file: $code $(cat $TMP/body)"
[ "$(get /label-values label=ci query=fromfile.cpu)" = '["gitlab"]' ] || fail "ci label in file"
[ "$(get /label-values label=commit query=fromfile.cpu)" = '["feedbeef"]' ] || fail "commit in file"
[ "$(get /label-values label=pipeline query=fromfile.cpu)" = '["99"]' ] || fail "pipeline in file"

# 4. A command that cannot start: 127.
$SCORCH ci -q -o $TMP/nf.pb.gz -- /nonexistent/cmd-xyz 2> $TMP/nf.err
[ $? -eq 127 ] || fail "missing command: not 127"

# 5. The server is gone: the profile is kept in a file, exit 1 although the command passed;
#    --best-effort keeps the command's 0.
mkdir -p $TMP/cwd
#    (999 Hz: 0.05 CPU-seconds of work give ~50 samples; at the default 99 Hz, ~5, and none
#    at all now and then)
(cd $TMP/cwd && github "$OLDPWD/$SCORCH" ci -q -F 999 --upload-timeout 2 --server http://127.0.0.1:1 -- "$OLDPWD/$WORK" 0.05) 2> $TMP/up.err
rc=$?
[ $rc -eq 1 ] || fail "failed upload: exit $rc, expected 1: $(cat $TMP/up.err)"
grep -q "cannot upload the profile to http://127.0.0.1:1" $TMP/up.err || fail "no upload error: $(cat $TMP/up.err)"
saved=$(ls $TMP/cwd/scorch-ci-*.pb.gz 2>/dev/null | head -1)
[ -n "$saved" ] || fail "profile not saved: $(cat $TMP/up.err)"
grep -q "curl --data-binary @scorch-ci-" $TMP/up.err || fail "no upload-later command: $(cat $TMP/up.err)"
$SCORCH convert "$saved" $TMP/saved.folded || fail "saved profile does not decode"
grep -q '^ci_work;' $TMP/saved.folded || fail "saved profile lacks ci_work"
(cd $TMP/cwd && "$OLDPWD/$SCORCH" ci -q --best-effort --upload-timeout 1 --server http://127.0.0.1:1 -- true) 2>/dev/null
[ $? -eq 0 ] || fail "--best-effort: failed upload changed the exit status"

# 6. Without BPF (an unprivileged user): an error, or with --best-effort the command as is.
if command -v setpriv >/dev/null 2>&1; then
	chmod 1777 "$TMP"
	setpriv --reuid=65534 --regid=65534 --clear-groups $SCORCH ci -q -o $TMP/np.pb.gz -- sh -c 'exit 4' 2> $TMP/np.err
	[ $? -eq 1 ] || fail "unprivileged without --best-effort: not exit 1"
	grep -q "needs root" $TMP/np.err || fail "unprivileged message: $(cat $TMP/np.err)"
	setpriv --reuid=65534 --regid=65534 --clear-groups $SCORCH ci -q --best-effort -o $TMP/np.pb.gz -- sh -c 'exit 4' 2> $TMP/np2.err
	rc=$?
	[ $rc -eq 4 ] || fail "--best-effort unprivileged: exit $rc, expected the command's 4: $(cat $TMP/np2.err)"
	grep -q "without profiling" $TMP/np2.err || fail "no warning: $(cat $TMP/np2.err)"
fi

# 7. Argument errors: exit 2 and a clear message.
SCORCH_SERVER= $SCORCH ci -- true 2> $TMP/a1.err
[ $? -eq 2 ] || fail "no destination: not exit 2"
grep -q "nowhere to put the profile" $TMP/a1.err || fail "destination message: $(cat $TMP/a1.err)"
$SCORCH ci -o $TMP/x.pb.gz 2> $TMP/a2.err
[ $? -eq 2 ] || fail "no command: not exit 2"
$SCORCH ci -o $TMP/x.pb.gz --label 'bad-name=x' -- true 2> $TMP/a3.err
[ $? -eq 2 ] || fail "bad label: not exit 2"
grep -q "invalid label name" $TMP/a3.err || fail "label message: $(cat $TMP/a3.err)"
$SCORCH ci --server ftp://x -- true 2> $TMP/a4.err
[ $? -eq 2 ] || fail "bad URL: not exit 2"
stop_server
echo "ok"
