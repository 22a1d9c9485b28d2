# SPDX-License-Identifier: Apache-2.0
"""tf.io.gfile on the local file system (deepflow reads no remote file systems)."""
import glob as _glob
import os
import shutil

__all__ = ["GFile", "exists", "glob", "isdir", "listdir", "makedirs", "mkdir", "remove", "rename", "rmtree",
           "copy", "join", "walk"]


def GFile(name, mode="r"):  # noqa: N802 - TensorFlow's name
    """tf.io.gfile.GFile: a file object (text for 'r'/'w', bytes for 'rb'/'wb')."""
    return open(name, mode)


def exists(path):
    return os.path.exists(path)


def glob(pattern):
    return sorted(_glob.glob(os.fspath(pattern)))


def isdir(path):
    return os.path.isdir(path)


def listdir(path):
    if not os.path.isdir(path):
        from .. import errors
        raise errors.NotFoundError(None, None, f"[gfile.listdir] could not find directory {path}")
    return os.listdir(path)


def makedirs(path):
    os.makedirs(path, exist_ok=True)


def mkdir(path):
    os.mkdir(path)


def remove(path):
    os.remove(path)


def rename(src, dst, overwrite=False):
    if not overwrite and os.path.exists(dst):
        from .. import errors
        raise errors.AlreadyExistsError(None, None, f"[gfile.rename] {dst} already exists")
    os.replace(src, dst)


def rmtree(path):
    shutil.rmtree(path)


def copy(src, dst, overwrite=False):
    if not overwrite and os.path.exists(dst):
        from .. import errors
        raise errors.AlreadyExistsError(None, None, f"[gfile.copy] {dst} already exists")
    shutil.copyfile(src, dst)


def join(path, *paths):
    return os.path.join(path, *paths)


def walk(top, topdown=True, onerror=None):
    return os.walk(top, topdown=topdown, onerror=onerror)
