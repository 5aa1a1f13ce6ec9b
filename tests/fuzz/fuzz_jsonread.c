/* fuzz_jsonread.c: jsonread_parse() on arbitrary bytes, then a walk of the tree it returns. */
#include "lib/jsonread.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t walk(const struct json_value *v)
{
	size_t i, n = 1;

	if (v->type == JSON_STRING)
		n += strlen(v->str) <= v->len;
	if (v->type == JSON_ARRAY || v->type == JSON_OBJECT)
		for (i = 0; i < v->n; i++)
			n += walk(&v->items[i]) + (v->keys ? strlen(v->keys[i]) : 0);
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct json_value *v = NULL;
	struct errmsg err;

	if (jsonread_parse((const char *)data, size, 4096, &v, &err) == 0) {
		walk(v);
		jsonread_get(v, "series");
		jsonread_free(v);
	}
	return 0;
}
