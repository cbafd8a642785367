"""How long an ELF file must be, from its headers alone (the truncated-``model.so`` check).

Mapping a shared library shorter than its headers say kills the process with SIGBUS, so
:func:`cwm.compile.artifact.check_library` compares the file size with :func:`elf_extent`
before loading. Pure ``struct`` parsing: 32/64-bit, either byte order, extended numbering.
"""
from __future__ import annotations

import struct

_ELF_MAGIC = b"\x7fELF"
_SHT_NULL, _SHT_NOBITS = 0, 8


def elf_extent(source) -> int:
    """How many bytes the ELF headers of ``source`` (bytes, or a binary file open for reading)
    say the file has: the header, the program and section header tables, every segment's file
    part and every section's data. ``ValueError`` when it does not start like an ELF file."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        def read(offset, n):
            return bytes(source[offset:offset + n])
    else:
        def read(offset, n):
            source.seek(offset)
            return source.read(n)
    head = read(0, 64)
    if len(head) < 6 or head[:4] != _ELF_MAGIC or head[4] not in (1, 2) or head[5] not in (1, 2):
        if len(head) < 6 and (_ELF_MAGIC.startswith(head) or head.startswith(_ELF_MAGIC)):
            return 64  # cut inside the identification bytes
        raise ValueError("not an ELF file")
    wide, order = head[4] == 2, "<" if head[5] == 1 else ">"
    header_size = 64 if wide else 52
    if len(head) < header_size:
        return header_size
    fields = struct.unpack_from(order + ("QQIHHHHHH" if wide else "IIIHHHHHH"), head, 0x20 if wide else 0x1C)
    phoff, shoff, _, ehsize, phentsize, phnum, shentsize, shnum, _ = fields
    need = max(header_size, ehsize)
    section = order + ("IIQQQQ" if wide else "IIIIII")  # name, type, flags, addr, offset, size
    section_size = struct.calcsize(section)
    if shoff and shentsize >= section_size and (shnum == 0 or phnum == 0xFFFF):
        first = read(shoff, section_size)  # extended numbering: the counts are in section 0
        if len(first) < section_size:
            return max(need, shoff + shentsize)
        _, _, _, _, _, size0 = struct.unpack_from(section, first)
        shnum = shnum or size0
        if phnum == 0xFFFF:
            info = read(shoff + (44 if wide else 28), 4)
            phnum = struct.unpack(order + "I", info)[0] if len(info) == 4 else phnum
    need = max(need, phoff + phentsize * phnum if phnum else 0, shoff + shentsize * shnum if shnum else 0)
    segment = order + ("IIQQQQ" if wide else "IIIIII")  # 64: type, flags, offset, vaddr, paddr, filesz
    segment_size = struct.calcsize(segment)
    if phnum and phentsize >= segment_size:
        table = read(phoff, phentsize * phnum)
        for i in range(min(phnum, len(table) // phentsize)):
            values = struct.unpack_from(segment, table, i * phentsize)
            offset, filesz = (values[2], values[5]) if wide else (values[1], values[4])
            if filesz:
                need = max(need, offset + filesz)
    if shnum and shentsize >= section_size:
        table = read(shoff, shentsize * shnum)
        for i in range(min(shnum, len(table) // shentsize)):
            _, kind, _, _, offset, size = struct.unpack_from(section, table, i * shentsize)
            if kind not in (_SHT_NULL, _SHT_NOBITS) and size:
                need = max(need, offset + size)
    return need
