"""Writing a description: atomically, never over an existing file unless asked."""
import json
import os
import tempfile


class FileExists(Exception):
    """The output file exists and force was not given."""


def dumps(desc):
    """The description as JSON text (one-space indent, as the fixtures)."""
    return json.dumps(desc, indent=1, allow_nan=False) + "\n"


def write_json(desc, path, force=False):
    """Write desc to path through a temporary file in the same directory and a rename."""
    if not force and os.path.exists(path):
        raise FileExists("%s exists (use --force to replace it)" % path)
    text = dumps(desc)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".tinspect-export-", suffix=".json", dir=folder)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if not force and os.path.exists(path):
            raise FileExists("%s exists (use --force to replace it)" % path)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
