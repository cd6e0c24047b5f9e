"""A PEP 517 build backend for the recorder, in the tree, with no requirements of its own.

`pip install ./python` builds in an isolated environment by default, and installs the backend's
requirements there first: setuptools would have to come from the package index, which a machine
without network (or with only Debian's mirror) cannot reach. This backend needs nothing but the
standard library, so `pip install ./python` and `pip install -e ./python` work offline. The wheel
holds the nanscope_recorder package and its data (capture_policy.json), nothing else.
"""
import base64
import hashlib
import os
import zipfile

NAME = "nanscope_recorder"
VERSION = "0.1.0"
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE = os.path.join(_HERE, NAME)
_DIST_INFO = "%s-%s.dist-info" % (NAME, VERSION)
_TAG = "py3-none-any"


def _metadata():
    return ("Metadata-Version: 2.1\nName: nanscope-recorder\nVersion: %s\n"
            "Summary: Records a PyTorch training run for nanscope (run.h5, checkpoints, batches)\n"
            "Requires-Python: >=3.9\n" % VERSION)


def _wheel_text():
    return "Wheel-Version: 1.0\nGenerator: nanscope_build\nRoot-Is-Purelib: true\nTag: %s\n" % _TAG


def _hash(data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "sha256=%s,%d" % (digest, len(data))


def _package_files():
    for name in sorted(os.listdir(_PACKAGE)):
        if name.endswith((".py", ".json")):
            yield "%s/%s" % (NAME, name), os.path.join(_PACKAGE, name)


def _write_wheel(wheel_directory, entries):
    """entries: (archive name, bytes). Adds the dist-info and its RECORD."""
    filename = "%s-%s-%s.whl" % (NAME, VERSION, _TAG)
    entries = list(entries) + [("%s/METADATA" % _DIST_INFO, _metadata().encode()),
                               ("%s/WHEEL" % _DIST_INFO, _wheel_text().encode())]
    record = "".join("%s,%s\n" % (name, _hash(data)) for name, data in entries)
    record += "%s/RECORD,,\n" % _DIST_INFO
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for name, data in entries:
            wheel.writestr(name, data)
        wheel.writestr("%s/RECORD" % _DIST_INFO, record)
    return filename


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = []
    for name, path in _package_files():
        with open(path, "rb") as f:
            entries.append((name, f.read()))
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    """An editable install: a .pth file that puts this folder on sys.path (PEP 660)."""
    return _write_wheel(wheel_directory, [("%s.pth" % NAME, (_HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    import tarfile
    base = "%s-%s" % (NAME, VERSION)
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as tar:
        for name in ("pyproject.toml", "nanscope_build", NAME):
            tar.add(os.path.join(_HERE, name), arcname="%s/%s" % (base, name),
                    filter=lambda info: None if "__pycache__" in info.name else info)
        pkg_info = os.path.join(sdist_directory, "PKG-INFO")
        with open(pkg_info, "w") as f:
            f.write(_metadata())
        tar.add(pkg_info, arcname="%s/PKG-INFO" % base)
        os.remove(pkg_info)
    return filename
