#!/usr/bin/env python3
"""extract-vmlinux.py BZIMAGE OUT: write the uncompressed ELF vmlinux inside a
bzImage (xz or gzip payload). QEMU boots it through the PVH entry point, which
saves the seconds of decompression that every TCG boot would otherwise cost."""
import lzma
import sys
import zlib

data = open(sys.argv[1], "rb").read()
for magic, unpack in (
    (b"\xfd7zXZ\x00", lambda b: lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(b)),
    (b"\x1f\x8b\x08", lambda b: zlib.decompressobj(31).decompress(b)),
):
    i = data.find(magic)
    while i >= 0:
        try:
            out = unpack(data[i:])
        except (lzma.LZMAError, zlib.error):
            out = b""
        if out[:4] == b"\x7fELF":
            with open(sys.argv[2], "wb") as f:
                f.write(out)
            sys.exit(0)
        i = data.find(magic, i + 1)
sys.exit(1)
