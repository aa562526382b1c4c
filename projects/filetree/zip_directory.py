"""What a zip declares about itself, checked before a single byte is inflated.

A zip ends with the end-of-central-directory record (EOCD), which states how many entries the
central directory holds; the central directory then states each entry's name, type and
uncompressed size. Both are read and checked here first, so that a small archive declaring a huge
tree, or a million entries, is refused without inflating (or even parsing) it. What an entry
really inflates to is capped again while it is read (``source._read_bounded``), in case it lies.
"""
from __future__ import annotations

import io
import stat
import struct
import zipfile
from typing import IO

from projects.filetree.errors import TreeError
from projects.filetree.paths import check_relative_path

ARCHIVE = "(archive)"
_EOCD = b"PK\x05\x06"
_EOCD_SIZE = 22
_ZIP64_LOCATOR = b"PK\x06\x07"
_ZIP64_LOCATOR_SIZE = 20
_ZIP64_EOCD = b"PK\x06\x06"
_MAX_COMMENT = 0xFFFF


def declared_entry_count(handle: IO[bytes]) -> int:
    """The entry count the EOCD (or its zip64 record) declares. Parsing the central directory of a
    50 MB upload holding a million empty entries would take seconds and hundreds of MB, so the
    count is read from the last bytes of the file before ``zipfile`` parses anything."""
    size = handle.seek(0, io.SEEK_END)
    tail_start = max(0, size - _EOCD_SIZE - _MAX_COMMENT)
    handle.seek(tail_start)
    tail = handle.read()
    handle.seek(0)
    position = tail.rfind(_EOCD)
    if position < 0 or len(tail) - position < _EOCD_SIZE:
        raise TreeError(ARCHIVE, "not a readable zip file: no end of central directory")
    (entries,) = struct.unpack_from("<H", tail, position + 10)
    if entries != 0xFFFF:
        return entries
    return _zip64_entry_count(handle, tail_start + position)


def _zip64_entry_count(handle: IO[bytes], eocd_offset: int) -> int:
    if eocd_offset < _ZIP64_LOCATOR_SIZE:
        return 0xFFFF
    handle.seek(eocd_offset - _ZIP64_LOCATOR_SIZE)
    locator = handle.read(_ZIP64_LOCATOR_SIZE)
    if not locator.startswith(_ZIP64_LOCATOR):
        return 0xFFFF  # exactly 65535 entries, no zip64 record
    (record_offset,) = struct.unpack_from("<Q", locator, 8)
    handle.seek(record_offset)
    record = handle.read(56)
    handle.seek(0)
    if not record.startswith(_ZIP64_EOCD) or len(record) < 40:
        raise TreeError(ARCHIVE, "not a readable zip file: broken zip64 end of central directory")
    (entries,) = struct.unpack_from("<Q", record, 32)
    return entries


def check_declared_entries(entries: list[zipfile.ZipInfo], *, max_file_bytes: int, max_tree_bytes: int,
                           max_files: int) -> None:
    """Refuse the archive from its central directory alone: entry count, every path (zip slip),
    symlinks, each entry's declared size and the declared total."""
    if len(entries) > max_files:
        raise TreeError(ARCHIVE, f"{len(entries)} files; the limit is {max_files}")
    total = 0
    for info in entries:
        check_relative_path(info.filename)
        if stat.S_ISLNK(info.external_attr >> 16):
            raise TreeError(info.filename, "symbolic links are not allowed")
        if info.file_size > max_file_bytes:
            raise TreeError(info.filename, f"file is {info.file_size} bytes; the limit is {max_file_bytes}")
        total += info.file_size
    if total > max_tree_bytes:
        raise TreeError(ARCHIVE, f"the files unpack to {total} bytes; the tree is larger than the limit of "
                                 f"{max_tree_bytes} bytes")
