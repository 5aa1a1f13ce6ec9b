/* banned.h: unsafe libc functions made into compile errors. Included into every translation
 * unit by the Makefile (-include). Use snprintf, buf_printf() or memcpy with a checked size. */
#ifndef SCORCH_BANNED_H
#define SCORCH_BANNED_H

#define BANNED(func) sorry_##func##_is_banned

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef gets
#define gets(x) BANNED(gets)

#endif
