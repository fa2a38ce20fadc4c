#!/usr/bin/python3
"""Write damaged copies of checkpoints for tests/torture/run.sh.

Usage: /usr/bin/python3 tests/torture/mutate.py [options] OUTDIR FILE...

Standard library only.  For each FILE (a zip checkpoint) it writes into OUTDIR:

  STEM.cut.N.pt    the first N bytes of FILE: every N below 64, every N in
                   the last 64 bytes, and --cuts more spread over the file
  STEM.pkl.N.pt    FILE with data.pkl cut to its first N bytes in place: the
                   central directory's (and the local header's, when set)
                   sizes and CRC-32 say N, so the zip is whole and the pickle
                   machine sees a pickle that stops early (--pickle-cuts of them)
  STEM.flip.K.pt   FILE with a few bytes changed (--flips copies): the first
                   quarter anywhere in the file, the rest inside data.pkl's
                   payload with its CRC-32 fixed, so the damage reaches the
                   pickle machine rather than a checksum

Everything comes from a seeded random generator per FILE (--seed, and the
file's name), so the same arguments write the same bytes.  It prints one line
per file written: its path.
"""

import argparse
import os
import random
import struct
import sys
import zlib

EDGE = 64  # every cut length within this many bytes of either end


def find_data_pkl(data):
    """(central entry offset, local header offset, payload offset, size) of */data.pkl, or None.

    Reads the end of central directory record (APPNOTE 4.3.16), its ZIP64
    counterpart when the 32-bit fields saturate (4.3.14-15), then the central
    headers (4.3.12) and the record's local header (4.3.7)."""
    eocd = data.rfind(b"PK\x05\x06", max(0, len(data) - 22 - 65535))
    if eocd < 0 or eocd + 22 > len(data):
        return None
    count, cd_size, cd_off = struct.unpack_from("<HII", data, eocd + 10)
    if cd_off == 0xFFFFFFFF or count == 0xFFFF:
        loc = eocd - 20
        if loc < 0 or data[loc:loc + 4] != b"PK\x06\x07":
            return None
        (rec,) = struct.unpack_from("<Q", data, loc + 8)
        if data[rec:rec + 4] != b"PK\x06\x06":
            return None
        count, cd_size, cd_off = struct.unpack_from("<QQQ", data, rec + 32)
    pos = cd_off
    for _ in range(count):
        if data[pos:pos + 4] != b"PK\x01\x02":
            return None
        csize, usize, nlen, xlen, clen = struct.unpack_from("<IIHHH", data, pos + 20)
        (local,) = struct.unpack_from("<I", data, pos + 42)
        name = data[pos + 46:pos + 46 + nlen]
        if name.endswith(b"/data.pkl") and data[local:local + 4] == b"PK\x03\x04":
            lnlen, lxlen = struct.unpack_from("<HH", data, local + 26)
            return pos, local, local + 30 + lnlen + lxlen, usize
        pos += 46 + nlen + xlen + clen
    return None


def set_pickle(data, where, payload, size):
    """Give data.pkl the size and CRC-32 of payload[:size] in every header that holds them."""
    central, local, _, _ = where
    crc = zlib.crc32(payload[:size])
    struct.pack_into("<III", data, central + 16, crc, size, size)
    # torch's writer (miniz) leaves the local header's CRC and sizes zero and
    # puts them in a data descriptor; Python's zipfile fills them in.
    if struct.unpack_from("<III", data, local + 14) != (0, 0, 0):
        struct.pack_into("<III", data, local + 14, crc, size, size)


def spread(n, count):
    return {n * (i + 1) // (count + 1) for i in range(count)}


def mutate(path, outdir, seed, cuts, pickle_cuts, flips):
    original = open(path, "rb").read()
    stem = os.path.splitext(os.path.basename(path))[0]
    rng = random.Random(f"{seed}:{stem}")
    written = []

    def emit(kind, n, data):
        out = os.path.join(outdir, f"{stem}.{kind}.{n}.pt")
        with open(out, "wb") as f:
            f.write(data)
        written.append(out)

    size = len(original)
    lengths = set(range(min(EDGE, size))) | set(range(max(0, size - EDGE), size)) | spread(size, cuts)
    for n in sorted(lengths):
        emit("cut", n, original[:n])

    where = find_data_pkl(original)
    if where and where[3] > 0 and where[2] + where[3] <= size:
        start, length = where[2], where[3]
        payload = original[start:start + length]
        # The first bytes (PROTO, the root container) and the last (STOP and
        # what closes the root) are where most opcodes meet their end.
        pickle_lengths = set(range(min(8, length))) | set(range(max(0, length - 8), length))
        pickle_lengths |= spread(length, max(0, pickle_cuts - len(pickle_lengths)))
        for n in sorted(pickle_lengths):
            data = bytearray(original)
            set_pickle(data, where, payload, n)
            emit("pkl", n, bytes(data))
    else:
        start, length = 0, size
        if original[:4] == b"PK\x03\x04" and not path.endswith(".npz"):  # a .npz has no data.pkl to aim at
            print(f"mutate.py: {path}: no data.pkl found; flipping anywhere", file=sys.stderr)

    for k in range(flips):
        data = bytearray(original)
        inside = k >= flips // 4 and length > 0
        lo, hi = (start, start + length) if inside else (0, size)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(lo, hi)
            how = rng.random()
            if how < 0.4:
                data[i] ^= 1 << rng.randrange(8)              # one bit
            elif how < 0.7:
                data[i] = rng.choice((0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF))  # a boundary
            else:
                data[i] = rng.randrange(256)                  # anything
        if inside and where:
            set_pickle(data, where, bytes(data[start:start + length]), length)
        emit("flip", k, bytes(data))
    return written


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", default="1")
    parser.add_argument("--cuts", type=int, default=40, help="cut lengths spread over the file (plus the edges)")
    parser.add_argument("--pickle-cuts", type=int, default=24, help="cut lengths of data.pkl")
    parser.add_argument("--flips", type=int, default=20, help="copies with changed bytes")
    parser.add_argument("outdir")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv[1:])
    for path in args.files:
        for out in mutate(path, args.outdir, args.seed, args.cuts, args.pickle_cuts, args.flips):
            print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
