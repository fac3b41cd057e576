#!/usr/bin/env bash
# `pip install .` into a fresh virtual environment with no package index (PIP_NO_INDEX: nothing may be downloaded),
# then the README's one-liner: pip_install_test.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR
set -euo pipefail
source_dir=$1 build_dir=$2 scratch=$3
rm -rf "$scratch"
python3 -m venv "$scratch/venv"
cd "$source_dir"
PIP_NO_INDEX=1 FSDPSIM_BUILD_DIR="$build_dir" "$scratch/venv/bin/pip" install --quiet .
cd "$scratch"
"$scratch/venv/bin/python" -c "import fsdpsim; print('mfu', fsdpsim.simulate(model='llama3-8b', topology='dgx-h100-ndr', config={'nodes': 1})['mfu'])"
