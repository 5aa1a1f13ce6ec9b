#!/usr/bin/env python3
"""pprof_mappings.py FILE: print the file name of each Mapping of a pprof profile (gzip or
raw), in the order the Mapping messages appear (tools take the first for the main file).
A minimal protobuf reader, so that the tests need no protobuf package."""
import gzip
import sys


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def fields(b):
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        yield num, v


def main():
    data = open(sys.argv[1], "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    strings, mappings = [], []
    for num, v in fields(data):
        if num == 6:
            strings.append(v.decode("utf-8", "replace"))
        elif num == 3:
            mappings.append(dict(fields(v)).get(5, 0))
    for s in mappings:
        print(strings[s] if s < len(strings) else "")


main()
