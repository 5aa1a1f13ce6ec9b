#!/usr/bin/env python3
"""gen_gopclntab.py: small ELF files holding a .gopclntab of each layout (Go 1.16-1.17, 1.18-1.19,
1.20+, and 1.20+ with no text start in the header, as Go 1.26 writes it), for the corpus of
tests/fuzz/fuzz_gopclntab.c and for tests/unit/test_gopclntab.c, which checks every layout
against the values below (only Go 1.19 can be built on the test machine).

    python3 tests/fuzz/gen_gopclntab.py tests/fuzz/corpus/gopclntab

Three functions at TEXT: main.outer [0, 0x40) with a 24-byte frame after its first 4 bytes and
main.inlinee inlined at [0x20, 0x30) (called from line 12, at parentPc 0x18), main.leaf [0x40,
0x60) frameless, main.other [0x60, 0x80). All in /src/main.go. Layouts: runtime/symtab.go
(pcHeader, _func, functab, inlinedCall) and runtime/runtime2.go of each release."""
import struct
import sys

TEXT = 0x401000
BASE = 0x400000  # vaddr of file offset 0
FILE = "/src/main.go"


def uvarint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def zigzag_table(runs):
    out = bytearray()
    prev = -1
    for value, length in runs:
        d = value - prev
        z = (d << 1) if d >= 0 else ((-d) << 1) - 1
        out += uvarint(z)
        out += uvarint(length)
        prev = value
    out.append(0)
    return bytes(out)


FUNCS = [
    # name, entry offset, size, pcsp runs, pcln runs, inline index runs (or None)
    ("main.outer", 0x00, 0x40, [(0, 4), (24, 0x38), (0, 4)],
     [(10, 0x10), (12, 0x10), (5, 0x10), (13, 0x10)], [(-1, 0x20), (0, 0x10), (-1, 0x10)]),
    ("main.leaf", 0x40, 0x20, [(0, 0x20)], [(20, 0x20)], None),
    ("main.other", 0x60, 0x20, [(0, 2), (8, 0x1E)], [(30, 0x20)], None),
]
INLINEE = "main.inlinee"
PARENT_PC = 0x18


def build(layout, header_text=True):
    # --- the parts of the table, each at an offset from the header
    names = bytearray()
    name_off = {}
    for n in [f[0] for f in FUNCS] + [INLINEE]:
        name_off[n] = len(names)
        names += n.encode() + b"\0"
    filetab = FILE.encode() + b"\0"
    cutab = struct.pack("<I", 0)  # CU 0, file 0 -> filetab offset 0
    pctab = bytearray(b"\0")  # offset 0 means "no table"
    tabs = []
    for name, entry, size, sp, ln, inl in FUNCS:
        t = {}
        for key, runs in (("sp", sp), ("file", [(0, size)]), ("ln", ln), ("inl", inl)):
            if runs is None:
                t[key] = 0
                continue
            t[key] = len(pctab)
            pctab += zigzag_table(runs)
        tabs.append(t)

    ptr = 8
    nw = 7 if layout == 116 else 8
    hdr_size = 8 + 8 * nw
    off = hdr_size
    funcname_off = off; off += len(names)
    cu_off = off; off += len(cutab)
    filetab_off = off; off += len(filetab)
    pctab_off = off; off += len(pctab)
    off = (off + 7) & ~7
    pcln_off = off

    # --- functab and _func records (pclntable)
    esz = 16 if layout == 116 else 8
    nfunc = len(FUNCS)
    funcs_blob = bytearray()
    func_offs = []
    base_funcs = esz * (nfunc + 1)
    inl_fixups = []  # (position in funcs_blob, which) for funcdata pointers
    for i, (name, entry, size, sp, ln, inl) in enumerate(FUNCS):
        while (base_funcs + len(funcs_blob)) % 8:
            funcs_blob.append(0)
        func_offs.append(base_funcs + len(funcs_blob))
        t = tabs[i]
        npcdata = 3 if inl else 0
        nfuncdata = 4 if inl else 0
        if layout == 116:
            rec = struct.pack("<QiiIIIIII", TEXT + entry, name_off[name], 0, 0, t["sp"], t["file"],
                              t["ln"], npcdata, 0)
            rec += struct.pack("<BBBB", 0, 0, 0, nfuncdata)
        elif layout == 118:
            rec = struct.pack("<IiiIIIIII", entry, name_off[name], 0, 0, t["sp"], t["file"], t["ln"],
                              npcdata, 0)
            rec += struct.pack("<BBBB", 0, 0, 0, nfuncdata)
        else:
            rec = struct.pack("<IiiIIIIIIi", entry, name_off[name], 0, 0, t["sp"], t["file"],
                              t["ln"], npcdata, 0, 1)
            rec += struct.pack("<BBBB", 0, 0, 0, nfuncdata)
        if inl:
            rec += struct.pack("<III", 0, 0, t["inl"])
        funcs_blob += rec
        if inl:
            if layout == 116:
                while (pcln_off + base_funcs + len(funcs_blob)) % 8:
                    funcs_blob.append(0)
                inl_fixups.append(len(funcs_blob) + 3 * 8)
                funcs_blob += struct.pack("<QQQQ", 0, 0, 0, 0)
            else:
                inl_fixups.append(len(funcs_blob) + 3 * 4)
                funcs_blob += struct.pack("<IIII", 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    functab = bytearray()
    ends = [f[1] for f in FUNCS] + [FUNCS[-1][1] + FUNCS[-1][2]]
    for i in range(nfunc + 1):
        fo = func_offs[i] if i < nfunc else func_offs[-1]
        if layout == 116:
            functab += struct.pack("<QQ", TEXT + ends[i], fo)
        else:
            functab += struct.pack("<II", ends[i], fo)
    pclntable = functab + funcs_blob

    table_len = pcln_off + len(pclntable)
    # --- the file: ELF header, 2 program headers, then .gopclntab, go:func (inline tree),
    # .noptrdata (moduledata) in a writable segment, .shstrtab, section headers
    ehsize, phsize = 64, 56
    tab_file_off = 0x200
    gofunc_off = (tab_file_off + table_len + 15) & ~15
    if layout == 120:
        tree = struct.pack("<BBBBiii", 0, 0, 0, 0, name_off[INLINEE], PARENT_PC, 4)
    else:
        tree = struct.pack("<hBBiiii", -1, 0, 0, 0, 12, name_off[INLINEE], PARENT_PC)
    rodata_end = gofunc_off + len(tree)
    data_off = (rodata_end + 0xFFF) & ~0xFFF
    md_words = [0] * 48
    tab_vaddr = BASE + tab_file_off
    md_words[0] = tab_vaddr
    md_words[1] = tab_vaddr + funcname_off
    md_words[13] = tab_vaddr + pcln_off
    md_words[22] = TEXT
    gofunc_vaddr = BASE + gofunc_off
    if layout == 118:
        md_words[38] = gofunc_vaddr
    elif layout == 120:
        md_words[40] = gofunc_vaddr
    moduledata = b"".join(struct.pack("<Q", w) for w in md_words)
    shstrtab = b"\0.gopclntab\0.noptrdata\0.shstrtab\0.text\0"
    shstr_off = data_off + len(moduledata)
    sh_off = (shstr_off + len(shstrtab) + 7) & ~7

    # patch the inline tree pointers
    for pos in inl_fixups:
        if layout == 116:
            struct.pack_into("<Q", funcs_blob, pos, gofunc_vaddr)
        else:
            struct.pack_into("<I", funcs_blob, pos, 0)
    pclntable = functab + funcs_blob

    magic = {116: 0xFFFFFFFA, 118: 0xFFFFFFF0, 120: 0xFFFFFFF1}[layout]
    hdr = struct.pack("<IBBBB", magic, 0, 0, 1, ptr)
    if layout == 116:
        hdr += struct.pack("<QQQQQQQ", nfunc, 1, funcname_off, cu_off, filetab_off, pctab_off,
                           pcln_off)
    else:
        hdr += struct.pack("<QQQQQQQQ", nfunc, 1, TEXT if header_text else 0, funcname_off, cu_off,
                           filetab_off, pctab_off, pcln_off)
    table = bytearray(hdr)
    table += names
    table += cutab
    table += filetab
    table += pctab
    while len(table) < pcln_off:
        table.append(0)
    table += pclntable
    assert len(table) == table_len

    img = bytearray(sh_off + 5 * 64)
    img[tab_file_off:tab_file_off + table_len] = table
    img[gofunc_off:gofunc_off + len(tree)] = tree
    img[data_off:data_off + len(moduledata)] = moduledata
    img[shstr_off:shstr_off + len(shstrtab)] = shstrtab
    # ELF header: ET_EXEC, x86-64
    img[0:64] = struct.pack("<4sBBBBB7sHHIQQQIHHHHHH", b"\x7fELF", 2, 1, 1, 0, 0, b"\0" * 7, 2, 62, 1,
                            TEXT, ehsize, sh_off, 0, ehsize, phsize, 2, 64, 5, 3)
    # PT_LOAD R+X over the table and the tree; PT_LOAD RW over the moduledata
    img[64:120] = struct.pack("<IIQQQQQQ", 1, 5, 0, BASE, BASE, rodata_end, rodata_end, 0x1000)
    data_len = shstr_off - data_off
    img[120:176] = struct.pack("<IIQQQQQQ", 1, 6, data_off, BASE + data_off, BASE + data_off,
                               data_len, data_len, 0x1000)
    # section headers: null, .gopclntab, .noptrdata, .shstrtab, .text (NOBITS, for the name)
    def sh(name, typ, flags, addr, off_, size, align):
        return struct.pack("<IIQQQQIIQQ", name, typ, flags, addr, off_, size, 0, 0, align, 0)
    shs = sh(0, 0, 0, 0, 0, 0, 0)
    shs += sh(1, 1, 2, tab_vaddr, tab_file_off, table_len, 32)
    shs += sh(12, 1, 3, BASE + data_off, data_off, len(moduledata), 32)
    shs += sh(23, 3, 0, 0, shstr_off, len(shstrtab), 1)
    shs += sh(33, 8, 6, TEXT, 0x1000, 0x80, 32)
    img[sh_off:sh_off + len(shs)] = shs
    return bytes(img)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    for name, layout, text in (("go116.elf", 116, True), ("go118.elf", 118, True),
                               ("go120.elf", 120, True), ("go120_notext.elf", 120, False)):
        with open(f"{out}/{name}", "wb") as f:
            f.write(build(layout, text))


if __name__ == "__main__":
    main()
