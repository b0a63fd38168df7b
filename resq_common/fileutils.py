#    Licensed under the Apache License, Version 2.0 (the "License"); you may
#    not use this file except in compliance with the License. You may obtain
#    a copy of the License at
#
#         http://www.apache.org/licenses/LICENSE-2.0
#
#    Unless required by applicable law or agreed to in writing, software
#    distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
#    WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
#    License for the specific language governing permissions and limitations
#    under the License.
"""Atomic file writes: a reader sees the old content or the new, never half."""

import contextlib
import os
import tempfile

TMP_PREFIX = '.resq-'


def atomic_write(path, text, tmp_prefix=TMP_PREFIX):
    """Write ``text`` to ``path`` atomically (temp file, fsync, rename).

    The temporary file lives in the same directory (so the rename is one
    step on one file system) and is removed when the write fails; the
    directory is synced after the rename so the new name survives a crash.
    """
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=tmp_prefix, suffix='.tmp',
                               dir=directory)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):
        dfd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
