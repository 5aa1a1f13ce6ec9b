# dump_linetables.py: prints, for code objects of a few modules, the raw line table and the
# line of every instruction as the interpreter itself computes it, for test_python.c.
#   C <version minor> <firstlineno> <hex table>
#   L <byte offset> <line, -1 when none>
import dis
import sys
import types


def codes(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from codes(c)


def table(co):
    if sys.version_info >= (3, 10):
        return co.co_linetable
    return co.co_lnotab


def lines(co):
    n = len(co.co_code)
    out = {}
    if sys.version_info >= (3, 10):
        for start, end, line in co.co_lines():
            for off in range(start, end, 2):
                out[off] = -1 if line is None else line
    else:
        starts = list(dis.findlinestarts(co))
        cur = co.co_firstlineno
        j = 0
        for off in range(0, n, 2):
            while j < len(starts) and starts[j][0] <= off:
                cur = starts[j][1]
                j += 1
            out[off] = cur
    return out


def main():
    count = 0
    for path in sys.argv[1:]:
        if "/" not in path:  # a module name: its source file
            path = __import__(path, fromlist=["x"]).__file__
        with open(path) as f:
            src = f.read()
        for co in codes(compile(src, path, "exec")):
            print("C", sys.version_info[1], co.co_firstlineno, table(co).hex())
            for off, line in sorted(lines(co).items()):
                print("L", off, line)
            count += 1
    print("N", count)


main()
