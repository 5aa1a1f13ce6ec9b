/* test_cienv.c: CI environment detection (src/ci/cienv.c) for each supported CI system, with
 * the environments those systems set. */
#include "ci/cienv.h"
#include "test.h"

/* A NULL-terminated list of "NAME=value" strings. */
static const char *get(void *ctx, const char *name)
{
	const char *const *env = ctx;
	size_t n = strlen(name);

	for (; *env; env++)
		if (!strncmp(*env, name, n) && (*env)[n] == '=')
			return *env + n + 1;
	return NULL;
}

#define V(e, f) ((e).value[f] ? (e).value[f] : "(none)")

static void test_github(void)
{
	static const char *env[] = {
		"CI=true", "GITHUB_ACTIONS=true", "GITHUB_SHA=0123456789abcdef0123456789abcdef01234567",
		"GITHUB_REF=refs/pull/42/merge", "GITHUB_REF_NAME=42/merge", "GITHUB_HEAD_REF=feature/x",
		"GITHUB_JOB=test", "RUNNER_NAME=GitHub Actions 7", "GITHUB_RUN_ID=987654321",
		"GITHUB_REPOSITORY=acme/widget", NULL,
	};
	struct cienv e;
	char name[64];

	CHECK_EQ_INT(cienv_detect(get, (void *)env, &e), 1);
	CHECK_EQ_STR(V(e, CIENV_CI), "github");
	CHECK_EQ_STR(V(e, CIENV_COMMIT), "0123456789abcdef0123456789abcdef01234567");
	CHECK_EQ_STR(V(e, CIENV_BRANCH), "feature/x");
	CHECK_EQ_STR(V(e, CIENV_JOB), "test");
	CHECK_EQ_STR(V(e, CIENV_RUNNER), "GitHub Actions 7");
	CHECK_EQ_STR(V(e, CIENV_PIPELINE), "987654321");
	CHECK_EQ_STR(V(e, CIENV_PR), "42");
	CHECK_EQ_INT(cienv_repo_name(&e, name, sizeof(name)), 6);
	CHECK_EQ_STR(name, "widget");
	cienv_release(&e);
}

static void test_github_push(void)
{
	static const char *env[] = {
		"GITHUB_ACTIONS=true", "GITHUB_SHA=abc", "GITHUB_REF=refs/heads/main",
		"GITHUB_REF_NAME=main", "GITHUB_HEAD_REF=", NULL,
	};
	struct cienv e;

	CHECK_EQ_INT(cienv_detect(get, (void *)env, &e), 1);
	CHECK_EQ_STR(V(e, CIENV_BRANCH), "main"); /* empty GITHUB_HEAD_REF falls through */
	CHECK(e.value[CIENV_PR] == NULL);
	CHECK(e.value[CIENV_RUNNER] == NULL);
	cienv_release(&e);
}

static void test_gitlab(void)
{
	static const char *env[] = {
		"GITLAB_CI=true", "CI_COMMIT_SHA=feedface", "CI_COMMIT_REF_NAME=main",
		"CI_MERGE_REQUEST_SOURCE_BRANCH_NAME=fix-parser", "CI_JOB_NAME=unit tests",
		"CI_RUNNER_ID=17", "CI_PIPELINE_ID=555", "CI_MERGE_REQUEST_IID=9",
		"CI_PROJECT_PATH=group/sub/project", NULL,
	};
	struct cienv e;
	char name[64];

	CHECK_EQ_INT(cienv_detect(get, (void *)env, &e), 1);
	CHECK_EQ_STR(V(e, CIENV_CI), "gitlab");
	CHECK_EQ_STR(V(e, CIENV_COMMIT), "feedface");
	CHECK_EQ_STR(V(e, CIENV_BRANCH), "fix-parser");
	CHECK_EQ_STR(V(e, CIENV_JOB), "unit tests");
	CHECK_EQ_STR(V(e, CIENV_RUNNER), "17");
	CHECK_EQ_STR(V(e, CIENV_PIPELINE), "555");
	CHECK_EQ_STR(V(e, CIENV_PR), "9");
	cienv_repo_name(&e, name, sizeof(name));
	CHECK_EQ_STR(name, "project");
	cienv_release(&e);
}

static void test_jenkins(void)
{
	static const char *env[] = {
		"JENKINS_URL=https://ci.example.com/", "GIT_COMMIT=c0ffee", "GIT_BRANCH=origin/release",
		"JOB_NAME=widget-build", "NODE_NAME=agent-3", "BUILD_NUMBER=128",
		"GIT_URL=https://github.com/acme/widget.git", NULL,
	};
	struct cienv e;
	char name[64];

	CHECK_EQ_INT(cienv_detect(get, (void *)env, &e), 1);
	CHECK_EQ_STR(V(e, CIENV_CI), "jenkins");
	CHECK_EQ_STR(V(e, CIENV_COMMIT), "c0ffee");
	CHECK_EQ_STR(V(e, CIENV_BRANCH), "release");
	CHECK_EQ_STR(V(e, CIENV_JOB), "widget-build");
	CHECK_EQ_STR(V(e, CIENV_RUNNER), "agent-3");
	CHECK_EQ_STR(V(e, CIENV_PIPELINE), "128");
	CHECK(e.value[CIENV_PR] == NULL);
	cienv_repo_name(&e, name, sizeof(name));
	CHECK_EQ_STR(name, "widget");
	cienv_release(&e);
}

static void test_circleci(void)
{
	static const char *env[] = {
		"CIRCLECI=true", "CIRCLE_SHA1=beef", "CIRCLE_BRANCH=dev", "CIRCLE_JOB=build",
		"CIRCLE_WORKFLOW_ID=6f1c-aa", "CIRCLE_PULL_REQUEST=https://github.com/acme/widget/pull/77",
		"CIRCLE_PROJECT_REPONAME=widget", NULL,
	};
	struct cienv e;

	CHECK_EQ_INT(cienv_detect(get, (void *)env, &e), 1);
	CHECK_EQ_STR(V(e, CIENV_CI), "circleci");
	CHECK_EQ_STR(V(e, CIENV_COMMIT), "beef");
	CHECK_EQ_STR(V(e, CIENV_PIPELINE), "6f1c-aa");
	CHECK_EQ_STR(V(e, CIENV_PR), "77");
	CHECK(e.value[CIENV_RUNNER] == NULL); /* CircleCI names no runner */
	cienv_release(&e);
}

static void test_buildkite(void)
{
	static const char *env[] = {
		"BUILDKITE=true", "BUILDKITE_COMMIT=a0bd708b", "BUILDKITE_BRANCH=user:fix",
		"BUILDKITE_LABEL=:rspec: unit (2.6)", "BUILDKITE_AGENT_NAME=bk-agent-1",
		"BUILDKITE_BUILD_NUMBER=59034", "BUILDKITE_PULL_REQUEST=false",
		"BUILDKITE_PIPELINE_SLUG=widget", NULL,
	};
	struct cienv e;

	CHECK_EQ_INT(cienv_detect(get, (void *)env, &e), 1);
	CHECK_EQ_STR(V(e, CIENV_CI), "buildkite");
	CHECK_EQ_STR(V(e, CIENV_JOB), ":rspec: unit (2.6)");
	CHECK_EQ_STR(V(e, CIENV_RUNNER), "bk-agent-1");
	CHECK_EQ_STR(V(e, CIENV_PIPELINE), "59034");
	CHECK(e.value[CIENV_PR] == NULL); /* "false" outside pull requests */
	cienv_release(&e);
}

static void test_none_and_cleaning(void)
{
	static const char *none[] = { "CI=true", "GITHUB_ACTIONS=false", "HOME=/root", NULL };
	static const char *dirty[] = { "GITLAB_CI=true", "CI_JOB_NAME=a\tb\nc", NULL };
	struct cienv e;
	char big[CIENV_MAX_VALUE + 64];
	size_t i;

	CHECK_EQ_INT(cienv_detect(get, (void *)none, &e), 0);
	for (i = 0; i < CIENV_NFIELDS; i++)
		CHECK(e.value[i] == NULL);
	cienv_release(&e);

	CHECK_EQ_INT(cienv_detect(get, (void *)dirty, &e), 1);
	CHECK_EQ_STR(V(e, CIENV_JOB), "a_b_c");
	/* Long values are cut on a UTF-8 boundary: 2-byte characters, odd limit. */
	for (i = 0; i + 1 < sizeof(big); i += 2) {
		big[i] = '\xc3';
		big[i + 1] = '\xa9';
	}
	big[sizeof(big) - 1] = '\0';
	cienv_set(&e, CIENV_JOB, big + 1); /* starts mid-character: still cut cleanly at the end */
	CHECK(strlen(e.value[CIENV_JOB]) <= CIENV_MAX_VALUE);
	CHECK(((unsigned char)e.value[CIENV_JOB][strlen(e.value[CIENV_JOB]) - 1]) == 0xa9);
	cienv_set(&e, CIENV_JOB, "");
	CHECK(e.value[CIENV_JOB] == NULL);
	CHECK_EQ_STR(cienv_label(CIENV_PIPELINE), "pipeline");
	cienv_release(&e);
}

int main(void)
{
	RUN(test_github);
	RUN(test_github_push);
	RUN(test_gitlab);
	RUN(test_jenkins);
	RUN(test_circleci);
	RUN(test_buildkite);
	RUN(test_none_and_cleaning);
	return test_summary();
}
