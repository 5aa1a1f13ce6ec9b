/* cienv.c: CI environment variables to labels (see cienv.h). One table row per CI system; a
 * field lists the variables to try in order, the first non-empty one wins. */
#include "ci/cienv.h"
#include "lib/alloc.h"

#include <stdio.h>
#include <string.h>

#define MAX_VARS 4

struct provider {
	const char *name;
	const char *marker;       /* variable that says we run there */
	const char *marker_value; /* required value, or NULL for any non-empty value */
	const char *vars[CIENV_NFIELDS][MAX_VARS];
	const char *repo[MAX_VARS];
};

/* CIENV_CI is filled from `name`; its row stays empty. */
static const struct provider providers[] = {
	{ "github", "GITHUB_ACTIONS", "true",
	  { {}, { "GITHUB_SHA" }, { "GITHUB_HEAD_REF", "GITHUB_REF_NAME" }, { "GITHUB_JOB" },
	    { "RUNNER_NAME" }, { "GITHUB_RUN_ID" }, { "GITHUB_REF" } },
	  { "GITHUB_REPOSITORY" } },
	{ "gitlab", "GITLAB_CI", "true",
	  { {}, { "CI_COMMIT_SHA" },
	    { "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_BRANCH", "CI_COMMIT_REF_NAME" },
	    { "CI_JOB_NAME" }, { "CI_RUNNER_DESCRIPTION", "CI_RUNNER_ID" }, { "CI_PIPELINE_ID" },
	    { "CI_MERGE_REQUEST_IID" } },
	  { "CI_PROJECT_PATH" } },
	{ "jenkins", "JENKINS_URL", NULL,
	  { {}, { "GIT_COMMIT" }, { "CHANGE_BRANCH", "BRANCH_NAME", "GIT_BRANCH" }, { "JOB_NAME" },
	    { "NODE_NAME" }, { "BUILD_NUMBER" }, { "CHANGE_ID" } },
	  { "GIT_URL" } },
	{ "circleci", "CIRCLECI", "true",
	  { {}, { "CIRCLE_SHA1" }, { "CIRCLE_BRANCH" }, { "CIRCLE_JOB" }, {},
	    { "CIRCLE_WORKFLOW_ID" }, { "CIRCLE_PR_NUMBER", "CIRCLE_PULL_REQUEST" } },
	  { "CIRCLE_PROJECT_REPONAME" } },
	{ "buildkite", "BUILDKITE", "true",
	  { {}, { "BUILDKITE_COMMIT" }, { "BUILDKITE_BRANCH" },
	    { "BUILDKITE_LABEL", "BUILDKITE_STEP_KEY" }, { "BUILDKITE_AGENT_NAME" },
	    { "BUILDKITE_BUILD_NUMBER" }, { "BUILDKITE_PULL_REQUEST" } },
	  { "BUILDKITE_PIPELINE_SLUG" } },
};

static const char *const labels[CIENV_NFIELDS] = {
	"ci", "commit", "branch", "job", "runner", "pipeline", "pr",
};

const char *cienv_label(enum cienv_field f)
{
	return f < CIENV_NFIELDS ? labels[f] : "";
}

/* A copy with control characters replaced, cut to CIENV_MAX_VALUE bytes on a UTF-8 boundary. */
static char *clean(const char *v)
{
	size_t n = strlen(v), i;
	char *s;

	if (n > CIENV_MAX_VALUE) {
		n = CIENV_MAX_VALUE;
		while (n > 0 && ((unsigned char)v[n] & 0xc0) == 0x80)
			n--;
	}
	s = xstrndup(v, n);
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			s[i] = '_';
	return s;
}

void cienv_set(struct cienv *e, enum cienv_field f, const char *value)
{
	if (f >= CIENV_NFIELDS)
		return;
	xfree(e->value[f]);
	e->value[f] = value && *value ? clean(value) : NULL;
}

static const char *first_of(cienv_getenv_fn get, void *ctx, const char *const *vars)
{
	size_t i;

	for (i = 0; i < MAX_VARS && vars[i]; i++) {
		const char *v = get(ctx, vars[i]);

		if (v && *v)
			return v;
	}
	return NULL;
}

/* "refs/pull/123/merge" -> "123"; a pull request URL ".../pull/123" -> "123"; "false" (what
 * Buildkite sets outside pull requests) and anything without digits -> NULL. */
static const char *pr_number(const char *v, char *buf, size_t buflen)
{
	const char *p, *end;
	size_t n;

	if (!v || !strcmp(v, "false"))
		return NULL;
	p = strstr(v, "pull/");
	if (!p)
		p = strstr(v, "pull-requests/");
	if (!p)
		p = strstr(v, "merge_requests/");
	if (p)
		p = strchr(p, '/') + 1;
	else if (!strncmp(v, "refs/", 5))
		return NULL; /* a branch or tag ref, not a pull request */
	else
		p = v;
	for (end = p; *end >= '0' && *end <= '9'; end++)
		;
	n = (size_t)(end - p);
	if (!n || n >= buflen || (*end && *end != '/'))
		return NULL;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

int cienv_detect(cienv_getenv_fn get, void *ctx, struct cienv *e)
{
	const struct provider *pv = NULL;
	char prbuf[32];
	const char *v;
	size_t i;
	int f;

	memset(e, 0, sizeof(*e));
	for (i = 0; i < sizeof(providers) / sizeof(providers[0]); i++) {
		v = get(ctx, providers[i].marker);
		if (v && *v && (!providers[i].marker_value || !strcmp(v, providers[i].marker_value))) {
			pv = &providers[i];
			break;
		}
	}
	if (!pv)
		return 0;
	cienv_set(e, CIENV_CI, pv->name);
	for (f = CIENV_COMMIT; f < CIENV_NFIELDS; f++) {
		v = first_of(get, ctx, pv->vars[f]);
		if (f == CIENV_PR)
			v = pr_number(v, prbuf, sizeof(prbuf));
		/* Jenkins' git plugin names the remote branch: "origin/main". */
		if (f == CIENV_BRANCH && v && !strcmp(pv->name, "jenkins") && !strncmp(v, "origin/", 7))
			v += 7;
		cienv_set(e, (enum cienv_field)f, v);
	}
	v = first_of(get, ctx, pv->repo);
	if (v && *v)
		e->repo = clean(v);
	return 1;
}

size_t cienv_repo_name(const struct cienv *e, char *out, size_t outlen)
{
	const char *r = e->repo, *start, *end;
	size_t n;

	if (!outlen)
		return 0;
	out[0] = '\0';
	if (!r)
		return 0;
	end = r + strlen(r);
	while (end > r && end[-1] == '/')
		end--;
	if (end - r > 4 && !strncmp(end - 4, ".git", 4))
		end -= 4;
	for (start = end; start > r && start[-1] != '/' && start[-1] != ':'; start--)
		;
	n = (size_t)(end - start);
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, start, n);
	out[n] = '\0';
	return n;
}

void cienv_release(struct cienv *e)
{
	int f;

	for (f = 0; f < CIENV_NFIELDS; f++)
		xfree(e->value[f]);
	xfree(e->repo);
	memset(e, 0, sizeof(*e));
}
