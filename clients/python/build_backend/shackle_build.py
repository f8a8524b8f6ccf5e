# SPDX-License-Identifier: MIT
"""A PEP 517 backend for one pure-Python package, standard library only.

It writes the wheel (PEP 427: the package, METADATA, WHEEL, RECORD with
sha256 digests) and nothing else; name and version are read from
pyproject.toml by the same few keys every time, so the two cannot differ.
"""
import base64
import hashlib
import os
import re
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "shackle_sdk"


def _project():
    text = open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8").read()
    section = text.split("[project]", 1)[1].split("\n[", 1)[0]
    fields = dict(re.findall(r'^(name|version|description|requires-python)\s*=\s*"([^"]*)"',
                             section, re.M))
    return fields


def _metadata(p):
    return ("Metadata-Version: 2.1\nName: %s\nVersion: %s\nSummary: %s\nRequires-Python: %s\n"
            "License: MIT\n" % (p["name"], p["version"], p["description"], p["requires-python"]))


def _dist_info(p):
    return "%s-%s.dist-info" % (p["name"].replace("-", "_"), p["version"])


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (path, digest, len(data))


def _files(p):
    out = []
    pkg = os.path.join(HERE, PACKAGE)
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py"):
            with open(os.path.join(pkg, name), "rb") as f:
                out.append((PACKAGE + "/" + name, f.read()))
    di = _dist_info(p)
    out.append((di + "/METADATA", _metadata(p).encode()))
    out.append((di + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: shackle_build\n"
                b"Root-Is-Purelib: true\nTag: py3-none-any\n"))
    return out


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = _project()
    di = os.path.join(metadata_directory, _dist_info(p))
    os.makedirs(di, exist_ok=True)
    with open(os.path.join(di, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(p))
    return _dist_info(p)


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    p = _project()
    name = "%s-%s-py3-none-any.whl" % (p["name"].replace("-", "_"), p["version"])
    files = _files(p)
    record = _dist_info(p) + "/RECORD"
    lines = [_record_line(path, data) for path, data in files] + [record + ",,"]
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in files:
            z.writestr(path, data)
        z.writestr(record, "\n".join(lines) + "\n")
    return name
