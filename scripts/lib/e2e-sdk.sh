# shellcheck shell=bash
# The Kubeflow Python SDK as a client of the operator: e2e/sdk (pytest) against the e2e cluster.
# Sourced by scripts/e2e, which sets $repo and KUBECONFIG and runs the operator first.
#
#   run_sdk_tests    pytest's exit status
#
# Users drive jobs with the SDK (kubeflow-training 1.9.x): its TrainingClient must read what
# trainctl's operator writes as it reads upstream's. The SDK is installed from PyPI, pinned in
# e2e/sdk/requirements.txt, into its own virtualenv ($repo/.venv-e2e, ignored by git) so that
# nothing touches the system's Python. The virtualenv is made again only when requirements.txt
# changes (its sha256 is kept in the virtualenv), so later runs need no network.

run_sdk_tests() {
    local root=${repo:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
    local venv="$root/.venv-e2e"
    local requirements="$root/e2e/sdk/requirements.txt"
    local stamp="$venv/requirements.sha256"
    if [[ -z "${KUBECONFIG:-}" ]]; then
        echo "run_sdk_tests: KUBECONFIG is not set (eval \"\$(scripts/cluster env)\")" >&2
        return 2
    fi
    local want
    want=$(sha256sum "$requirements" | cut -d' ' -f1) || return
    if [[ ! -x "$venv/bin/python" || "$(cat "$stamp" 2>/dev/null)" != "$want" ]]; then
        echo "run_sdk_tests: installing e2e/sdk/requirements.txt into $venv" >&2
        # --clear: a package dropped from requirements.txt goes as well.
        python3 -m venv --clear "$venv" || return
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
            -r "$requirements" || return
        echo "$want" >"$stamp"
    fi
    # No .pytest_cache nor __pycache__ in the checkout.
    (cd "$root" && PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -m pytest -q -rxX \
        -p no:cacheprovider e2e/sdk)
}
