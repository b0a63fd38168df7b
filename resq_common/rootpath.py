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
"""Paths only root can change, opened without following links.

The privileged side of the agent reads its configuration and writes the
resctrl tree. A path it trusts must not be changeable by the agent's user
at any component: each directory is opened from ``/`` one component at a
time with ``O_NOFOLLOW`` (a symbolic link anywhere on the way is refused,
not followed), and each is checked on its open descriptor, never by name
again.

Standard library only: the privileged daemon imports this before anything
else of the project's to check the code it is about to run.
"""

import os
import stat

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
MAX_CONFIG_BYTES = 64 * 1024


class Refused(Exception):
    """A path the privileged side will not trust; the text says why."""


def components(path):
    """The names of ``path``'s components; it must be plain and absolute.

    :raises Refused: a relative path, or one with ``.`` or ``..``.
    """
    if not isinstance(path, str) or not os.path.isabs(path):
        raise Refused('%r is not an absolute path' % (path,))
    parts = [p for p in path.split('/') if p]
    if any(p in ('.', '..') for p in parts) or '\0' in path:
        raise Refused('%s is not a plain absolute path (no "." or "..")'
                      % path)
    return parts


def root_only(st, where, owners=(0,)):
    """Refuse ``st`` unless it belongs to root and only root may write it.

    A sticky directory (``/tmp``) passes: its root-owned entries cannot be
    renamed or removed by other users.

    :param owners: the uids allowed to own it (root's alone by default).
    """
    if st.st_uid not in owners:
        raise Refused('%s must belong to root (it is uid %d): the user '
                      'owning it can replace what root reads or writes '
                      'beneath it' % (where, st.st_uid))
    writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if writable and not (stat.S_ISDIR(st.st_mode)
                         and st.st_mode & stat.S_ISVTX):
        raise Refused('%s must be writable by root alone (mode %o)'
                      % (where, stat.S_IMODE(st.st_mode)))


def open_dir(path, check=root_only, last=True):
    """An fd of directory ``path``, walked from ``/`` without links.

    :param check: called as ``check(st, where)`` on each directory's
        ``fstat``, ``/`` included; raise :class:`Refused` to refuse.
    :param last: whether to open (and check) the last component too;
        with ``last=False`` this returns the parent's fd.
    :returns: ``(fd, name)``: the open directory and the last component
        (``''`` for ``/`` itself).
    :raises Refused: naming the component that fails and why.
    """
    parts = components(path)
    walk = parts if last else parts[:-1]
    fd = os.open('/', DIR_FLAGS)
    where = '/'
    try:
        check(os.fstat(fd), where)
        for part in walk:
            where = os.path.join(where, part)
            try:
                nfd = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise Refused('%s cannot be opened as a directory (%s; a '
                              'symbolic link is refused, not followed)'
                              % (where, exc.strerror))
            os.close(fd)
            fd = nfd
            check(os.fstat(fd), where)
    except BaseException:
        os.close(fd)
        raise
    return fd, (parts[-1] if parts else '')


def read_root_file(path, max_bytes=MAX_CONFIG_BYTES):
    """The content of ``path``, read once, if only root could change it.

    Root alone may write the file and every directory leading to it.

    :raises Refused: naming the path component that fails and why.
    """
    dfd, name = open_dir(path, last=False)
    try:
        try:
            fd = os.open(name, FILE_FLAGS, dir_fd=dfd)
        except OSError as exc:
            raise Refused('%s cannot be read (%s; a symbolic link is '
                          'refused)' % (path, exc.strerror))
    finally:
        os.close(dfd)
    with os.fdopen(fd, 'rb') as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused('%s is not a regular file' % path)
        root_only(st, path)
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise Refused('%s is larger than %d bytes' % (path, max_bytes))
    return data


def check_tree(top, owners=(0,), limit=20000):
    """Refuse a code tree someone other than ``owners`` could change.

    ``top``, every directory from ``/`` to it, and every file and directory
    beneath it must belong to one of ``owners`` and be writable by no one
    else. Symbolic links inside the tree are refused (root would follow
    them on import).

    :raises Refused: naming the first path that fails.
    """
    def check(st, where):
        root_only(st, where, owners)

    fd, _name = open_dir(top, check)
    os.close(fd)
    seen = 0
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        for name in dirnames + filenames:
            where = os.path.join(dirpath, name)
            st = os.lstat(where)
            if stat.S_ISLNK(st.st_mode):
                raise Refused('%s is a symbolic link inside code root runs'
                              % where)
            check(st, where)
            seen += 1
            if seen > limit:
                raise Refused('%s holds more than %d files; not a package'
                              % (top, limit))


# The memory file root's verified configuration was handed to oslo.config
# through (its /proc/self/fd path), in the privileged daemon.
_verified = {'path': None}


def set_verified(path):
    _verified['path'] = path


def verified_config():
    """Where this process's oslo.config read root's verified file.

    The memory file's path in the privileged daemon, else ``None``.
    """
    return _verified['path']
