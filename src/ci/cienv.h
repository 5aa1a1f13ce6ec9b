/* cienv.h: what a CI system tells a job about itself, read from its environment variables:
 * GitHub Actions, GitLab CI, Jenkins, CircleCI and Buildkite (the variables each one reads are
 * listed in docs/ci.md). `scorch ci` turns the result into profile labels.
 *
 * Pure: the environment comes through a getter, so tests pass a fixed table. Values are
 * cleaned (control characters become '_', at most CIENV_MAX_VALUE bytes, cut on a UTF-8
 * boundary). The struct owns its strings: cienv_release(). */
#ifndef SCORCH_CIENV_H
#define SCORCH_CIENV_H

#include <stddef.h>

#define CIENV_MAX_VALUE 256

/* One entry per label `scorch ci` sets, in this order. */
enum cienv_field {
	CIENV_CI,       /* provider: github, gitlab, jenkins, circleci, buildkite */
	CIENV_COMMIT,
	CIENV_BRANCH,
	CIENV_JOB,
	CIENV_RUNNER,
	CIENV_PIPELINE, /* the pipeline / workflow run / build number */
	CIENV_PR,       /* pull or merge request number, when the run is for one */
	CIENV_NFIELDS,
};

struct cienv {
	char *value[CIENV_NFIELDS]; /* NULL when unknown */
	char *repo;                 /* repository ("owner/name" or a project path), or NULL */
};

typedef const char *(*cienv_getenv_fn)(void *ctx, const char *name);

/* The label name of a field ("ci", "commit", "branch", "job", "runner", "pipeline", "pr"). */
const char *cienv_label(enum cienv_field f);

/* Fill e from the first CI system whose marker variable is set (GITHUB_ACTIONS=true,
 * GITLAB_CI=true, JENKINS_URL, CIRCLECI=true, BUILDKITE=true). Returns 1 when one was
 * found, 0 otherwise (e is then all NULL). */
int cienv_detect(cienv_getenv_fn get, void *ctx, struct cienv *e);

/* Set field f to a cleaned copy of value (NULL or "" clears it). */
void cienv_set(struct cienv *e, enum cienv_field f, const char *value);

/* The last path component of the repository, without a ".git" suffix ("scorch" for
 * "acme/scorch.git"), into out; 0 when there is none. */
size_t cienv_repo_name(const struct cienv *e, char *out, size_t outlen);

void cienv_release(struct cienv *e);

#endif
