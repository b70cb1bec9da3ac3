"""The on-disk compilation cache's files: format, atomic writes, LRU bound.

backend.py decides what to cache and (de)serializes executables; this module only
stores bytes under a path and keeps the directory under its size bound. No jaxlib.

Entry format: an 8-byte magic, the payload's length (8 bytes, little-endian) and
its SHA-256 (32 bytes), then the payload. A reader that finds a short file, a
wrong length or a wrong digest (a crash mid-write on a filesystem without atomic
rename, a disk error, a foreign file) treats it as a miss and removes it.

Writers write a private temporary file in the entry's directory and rename it
over the entry: two processes storing the same key each install a whole file,
and a reader sees the old or the new one, never a mix.

Least recently used: a load sets the entry's mtime to now; when the directory
grows past the bound, the oldest entries (by mtime) are removed until it is
back under 90% of it (the slack keeps every store from rescanning).
"""
import hashlib
import os
import struct
import tempfile
import time

MAGIC = b"TJXLA\x00\x01\n"
_HEADER = struct.Struct("<8sQ32s")
SUFFIX = ".xla"
_TMP_SUFFIX = ".tmp"
_STALE_TMP_SECS = 3600.0  # a temporary file this old belongs to a writer that died

# This process's estimate of the directory's size: scanned once, then advanced by
# each store; rescanned when past the bound (other processes write there too) or
# every _RESCAN_EVERY stores.
_estimate = {}
_stores_since_scan = {}
_RESCAN_EVERY = 256


def entry_path(cache_dir, digest):
  """Where the entry with hex `digest` lives: two-level fan-out keeps dirs small."""
  return os.path.join(cache_dir, digest[:2], digest + SUFFIX)


def read_entry(path):
  """The payload stored at `path`, or None when missing, truncated or corrupt.

  A corrupt entry is removed; a good one has its mtime set to now (LRU).

  Example:
    >>> read_entry("/nonexistent/entry.xla") is None
    True
  """
  try:
    with open(path, "rb") as f:
      data = f.read()
  except OSError:
    return None
  if len(data) >= _HEADER.size:
    magic, n, digest = _HEADER.unpack_from(data)
    payload = data[_HEADER.size:]
    if magic == MAGIC and n == len(payload) and hashlib.sha256(payload).digest() == digest:
      try:
        os.utime(path)
      except OSError:  # read-only cache: still a hit
        pass
      return payload
  remove(path)
  return None


def remove(path):
  try:
    os.unlink(path)
  except OSError:  # gone already (another process evicted or replaced it)
    pass


def write_entry(path, payload, max_bytes=0):
  """Store `payload` at `path` atomically, then keep the directory under `max_bytes`.

  Args:
    path: the entry's path (see `entry_path`); its directory is created.
    payload: bytes.
    max_bytes: the size bound of the cache root (the parent of `path`'s fan-out
      directory); <= 0: unbounded.

  Raises OSError when the file cannot be written (the caller warns and goes on).

  Example:
    >>> import tempfile, os
    >>> root = tempfile.mkdtemp()
    >>> p = entry_path(root, "ab" * 32)
    >>> write_entry(p, b"payload")
    >>> read_entry(p)
    b'payload'
  """
  d = os.path.dirname(path)
  os.makedirs(d, exist_ok=True)
  header = _HEADER.pack(MAGIC, len(payload), hashlib.sha256(payload).digest())
  fd, tmp = tempfile.mkstemp(dir=d, suffix=_TMP_SUFFIX)
  try:
    with os.fdopen(fd, "wb") as f:
      f.write(header)
      f.write(payload)
    os.replace(tmp, path)
  except BaseException:
    remove(tmp)
    raise
  if max_bytes and max_bytes > 0:
    _account(os.path.dirname(d), _HEADER.size + len(payload), max_bytes)


def _account(root, added, max_bytes):
  n = _stores_since_scan.get(root, 0) + 1
  est = _estimate.get(root)
  if est is None or n >= _RESCAN_EVERY:
    est = scan(root)[1]
    n = 0
  else:
    est += added
  if est > max_bytes:
    est = evict(root, max_bytes)
    n = 0
  _estimate[root], _stores_since_scan[root] = est, n


def _entries(root):
  """(mtime, size, path) of every entry under `root`; removes stale temporaries."""
  out = []
  now = time.time()
  try:
    subdirs = list(os.scandir(root))
  except OSError:
    return out
  for sub in subdirs:
    if not sub.is_dir(follow_symlinks=False):
      continue
    try:
      files = list(os.scandir(sub.path))
    except OSError:
      continue
    for e in files:
      try:
        st = e.stat(follow_symlinks=False)
      except OSError:
        continue
      if e.name.endswith(SUFFIX):
        out.append((st.st_mtime, st.st_size, e.path))
      elif e.name.endswith(_TMP_SUFFIX) and now - st.st_mtime > _STALE_TMP_SECS:
        remove(e.path)
  return out


def scan(root):
  """(number of entries, total bytes) of the cache directory `root`.

  Example:
    >>> scan("/nonexistent/cache")
    (0, 0)
  """
  entries = _entries(root)
  return len(entries), sum(s for _, s, _ in entries)


def evict(root, max_bytes):
  """Remove least recently used entries until `root` holds <= 90% of `max_bytes`.

  Returns the bytes left. Entries removed concurrently by another process are
  simply skipped.

  Example:
    >>> evict("/nonexistent/cache", 1 << 20)
    0
  """
  entries = sorted(_entries(root))
  total = sum(s for _, s, _ in entries)
  if total <= max_bytes:
    return total
  target = int(max_bytes * 0.9)
  for _, size, path in entries:
    if total <= target:
      break
    remove(path)
    total -= size
  return total
