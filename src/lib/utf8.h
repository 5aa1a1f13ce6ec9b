/* utf8.h: encoding a code point as UTF-8, for every reader that turns another encoding
 * (UTF-16, Latin-1, escapes) into the UTF-8 strings scorch keeps. */
#ifndef SCORCH_UTF8_H
#define SCORCH_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* Writes cp as UTF-8 into out (1 to 4 bytes) and returns the count. A value past U+10FFFF is
 * written as '?'. Surrogates are encoded as they are: a caller that must not keep them
 * replaces them first. */
size_t utf8_encode(uint32_t cp, char out[4]);

#endif
