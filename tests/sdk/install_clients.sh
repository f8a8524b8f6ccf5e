#!/bin/sh
# SPDX-License-Identifier: MIT
# Install the Python and Node clients as a user would, offline (no PyPI
# here): a venv with pip --no-build-isolation (the venv's own setuptools),
# and npm install of the package folder. Copies first: pip builds in the
# source folder, and the tree must stay clean and shared.
# usage: install_clients.sh SOURCE_ROOT DIR PYTHON NPM
set -eu
SRC=$1 DIR=$2 PY=$3 NPM=$4
cp -R "$SRC/clients/python" "$DIR/py-src"
cp -R "$SRC/clients/node" "$DIR/node-src"
"$PY" -m venv "$DIR/venv"
"$DIR/venv/bin/python" -m pip install --quiet --no-index \
	--disable-pip-version-check "$DIR/py-src"
mkdir -p "$DIR/node"
cd "$DIR/node"
"$NPM" install --offline --no-audit --no-fund --install-links --silent "$DIR/node-src"
cp "$SRC/clients/node/examples/agent.js" "$DIR/node/agent.js"
cp "$SRC/clients/python/examples/agent.py" "$DIR/agent.py"
