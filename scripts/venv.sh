# Sourced by the setup scripts (scripts/setup.sh, scripts/adverts/setup.sh, scripts/homeassistant/setup.sh): a Python
# venv kept in step with a pinned requirements file. A stamp in the venv holds the file's hash, so a venv already in
# step costs one hash and no pip; the caller's `log` function prints the messages.
# shellcheck shell=bash

# venv_current VENV REQUIREMENTS: true when VENV's interpreter runs and was last filled from this REQUIREMENTS.
venv_current() {
    [ -x "$1/bin/python" ] && "$1/bin/python" -c '' 2>/dev/null \
        && [ "$(cat "$1/.requirements.sha256" 2>/dev/null)" = "$(sha256sum "$2" | cut -d' ' -f1)" ]
}

# venv_python VARIABLE_VALUE: the interpreter to make venvs with: the one given, else Debian's own (the one
# python3-venv serves), else the first python3 on PATH.
venv_python() {
    if [ -n "$1" ]; then echo "$1"
    elif [ -x /usr/bin/python3 ]; then echo /usr/bin/python3
    else command -v python3
    fi
}

# venv_create VENV PYTHON: VENV made with PYTHON unless a working one is there.
venv_create() {
    if ! [ -x "$1/bin/python" ] || ! "$1/bin/python" -c '' 2>/dev/null; then
        log "creating $1 with $2"
        rm -rf "$1"
        "$2" -m venv "$1"
    fi
}

# venv_stamp VENV REQUIREMENTS: VENV is now in step with REQUIREMENTS.
venv_stamp() { sha256sum "$2" | cut -d' ' -f1 > "$1/.requirements.sha256"; }
