# Sourced by the CI steps. Two things are shared within one run of .ci/run, each made once:
# - uv (N5MS_UV), which installs the environments that are not the README's own commands (those
#   run pip exactly as a user types them) in seconds where pip takes minutes;
# - the wheels that .ci/dist.sh builds from the sdist, one per Python (N5MS_CI_WHEELS), for the
#   steps that test the installed package rather than its build (oldest, zarr 2, docs).
# Each step still runs alone (bash .ci/STEP.sh): it then gets uv and a wheel of its own.

UV_VERSION=0.13.9

ci_uv() {  # sets N5MS_UV, installing uv into a venv of its own when the run has none
    if [ -z "${N5MS_UV:-}" ] || [ ! -x "$N5MS_UV" ]; then
        local tools
        tools=$(mktemp -d "${TMPDIR:-/tmp}/n5ms-uv.XXXXXX")
        python3 -m venv "$tools/venv"
        "$tools/venv/bin/pip" install -q "uv==$UV_VERSION"
        export N5MS_UV="$tools/venv/bin/uv"
    fi
}

ci_venv() {  # $1: directory, $2: python. A venv with pip in it (some steps call pip themselves).
    ci_uv
    "$N5MS_UV" venv -q --seed --python "$2" "$1"
}

ci_install() {  # $1: venv directory; the rest: `uv pip install` arguments
    ci_uv
    local venv=$1
    shift
    "$N5MS_UV" pip install -q --python "$venv/bin/python" "$@"
}

ci_sources() {  # $1: directory to fill with the tracked and untracked-but-not-ignored files of the checkout
    local repo
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    mkdir -p "$1"
    git -C "$repo" ls-files -z --cached --others --exclude-standard \
        | (cd "$repo" && tar --null -T - --ignore-failed-read -cf -) \
        | tar -xf - -C "$1"
}

ci_python_tag() {  # $1: python -> its wheel tag, e.g. cp311
    "$1" -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")'
}

ci_wheel() {  # $1: python. Prints the path of a wheel built from the sdist for that Python:
    # the one .ci/dist.sh built in this run, else one built now from a fresh sdist of the checkout.
    local tag found work
    tag=$(ci_python_tag "$1")
    if [ -n "${N5MS_CI_WHEELS:-}" ]; then
        found=$(ls "$N5MS_CI_WHEELS"/n5mscodecs-*-"$tag"-*.whl 2>/dev/null | head -1 || true)
        [ -n "$found" ] && { echo "$found"; return; }
    fi
    ci_uv
    work=$(mktemp -d "${TMPDIR:-/tmp}/n5ms-wheel.XXXXXX")
    ci_sources "$work/src"
    "$N5MS_UV" build -q --python "$1" --out-dir "$work/dist" "$work/src" >&2
    ls "$work/dist"/n5mscodecs-*-"$tag"-*.whl
}

ci_shared() {  # the real N5 data beside the checkout, for the tests run from a copy
    local repo
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    if [ -z "${N5MSCODECS_SHARED:-}" ] && [ -d "$repo/../shared" ]; then
        export N5MSCODECS_SHARED="$repo/../shared"
    fi
}

find_python() {  # $1: version such as 3.12 -> a working interpreter of it (PATH, then pyenv), or nothing
    local version=$1 candidate
    for candidate in "$(command -v "python$version" || true)" "$HOME"/.pyenv/versions/"$version".*/bin/"python$version" \
                     /root/.pyenv/versions/"$version".*/bin/"python$version"; do
        [ -n "$candidate" ] && [ -x "$candidate" ] || continue
        if "$candidate" -c "import sys; sys.exit(f'{sys.version_info[0]}.{sys.version_info[1]}' != '$version')" \
                >/dev/null 2>&1; then
            echo "$candidate"
            return
        fi
    done
}
