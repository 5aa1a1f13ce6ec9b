/* replay_main.c: runs a libFuzzer target over files (or every file of directories) given on
 * the command line, so `make test` replays each fuzz corpus under ASan/UBSan with gcc. */
#include "lib/alloc.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data;
	long n;

	if (!f) {
		fprintf(stderr, "replay: cannot open '%s'\n", path);
		return -1;
	}
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	data = malloc(n > 0 ? (size_t)n : 1);
	if (!data || (n > 0 && fread(data, 1, (size_t)n, f) != (size_t)n)) {
		fprintf(stderr, "replay: cannot read '%s'\n", path);
		fclose(f);
		free(data);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(data, (size_t)n);
	free(data);
	return 0;
}

int main(int argc, char **argv)
{
	int i, count = 0, failed = 0;

	for (i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "replay: no such file '%s'\n", argv[i]);
			failed++;
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *e;

			while (d && (e = readdir(d))) {
				char path[4096];

				if (e->d_name[0] == '.')
					continue;
				snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
				failed += replay_file(path) < 0;
				count++;
			}
			if (d)
				closedir(d);
		} else {
			failed += replay_file(argv[i]) < 0;
			count++;
		}
	}
	printf("replayed %d inputs\n", count);
	if (count == 0) {
		fprintf(stderr, "replay: empty corpus\n");
		return 1;
	}
	return failed ? 1 : 0;
}
