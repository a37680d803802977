# Builds the binaries of the e2e control plane from the Go module proxy into a cache outside the
# clone, one folder per component and version, so that later runs (and CI on the same machine)
# reuse them. Sourced by scripts/cluster; expects CACHE and the *_VERSION variables.
#
# Nothing here downloads a prebuilt binary: every component is compiled from its Go module.
# Go's own module and build caches (GOMODCACHE, GOCACHE) are outside the clone as well and make a
# rebuild after a version bump much shorter than the first build.

# build_component NAME VERSION FUNCTION: runs FUNCTION DIR into a scratch folder and moves it to
# $CACHE/NAME-VERSION only when it succeeded, so that a half-built folder is never taken as done.
build_component() {
    local name=$1 version=$2 builder=$3
    local done_dir="$CACHE/$name-$version"
    if [[ -f "$done_dir/.complete" ]]; then
        echo "$name $version: cached in $done_dir" >&2
        return 0
    fi
    local scratch
    scratch=$(mktemp -d "$CACHE/.build-$name.XXXXXX")
    local started=$SECONDS
    echo "$name $version: building into $done_dir (from the Go module proxy)" >&2
    if ! "$builder" "$scratch" "$version"; then
        rm -rf "$scratch"
        echo "$name $version: build FAILED" >&2
        return 1
    fi
    rm -rf "$scratch/src"
    touch "$scratch/.complete"
    rm -rf "$done_dir"
    mv "$scratch" "$done_dir"
    echo "$name $version: built in $((SECONDS - started)) s" >&2
}

# k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces 33 staging modules with
# ./staging/src/... folders. A wrapper module requires it and replaces exactly those modules with
# their published v0.MINOR.PATCH tags (the other k8s.io requirements, such as k8s.io/utils, are
# real pseudo-versions and stay as they are).
build_kubernetes() {
    local out=$1 version=$2
    local src="$out/src"
    mkdir -p "$src"
    (
        set -euo pipefail
        cd "$src"
        local staging_version="v0.${version#*.}"
        go mod download -json "k8s.io/kubernetes@v$version" >/dev/null
        local upstream_mod
        upstream_mod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/v$version.mod"
        local go_line
        go_line=$(sed -n 's/^go \(.*\)$/\1/p' "$upstream_mod" | head -n 1)
        {
            echo "module trainctl.invalid/cluster/kubernetes"
            echo
            echo "go $go_line"
            echo
            echo "require k8s.io/kubernetes v$version"
            echo
            echo "replace ("
            sed -n 's#^[[:space:]]*\(k8s.io/[^[:space:]]*\) => ./staging/src/.*$#\t\1 => \1 '"$staging_version"'#p' \
                "$upstream_mod"
            echo ")"
        } >go.mod
        local replaced
        replaced=$(grep -c ' => ' go.mod)
        if [[ $replaced -lt 20 ]]; then
            echo "expected the staging replaces of k8s.io/kubernetes v$version, found $replaced" >&2
            exit 1
        fi
        # Resolves every requirement of the commands below and writes go.sum.
        cat >tools.go <<'EOF'
//go:build tools

package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
EOF
        go mod tidy -e >/dev/null 2>tidy.log || { cat tidy.log >&2; exit 1; }
        # What upstream's hack/lib/version.sh stamps, so that /version and `kubectl version`
        # report the real version.
        local minor=${version#*.}
        minor=${minor%%.*}
        local ldflags="-s -w"
        local key value
        for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
            for key in gitVersion gitMajor gitMinor gitTreeState buildDate; do
                case $key in
                    gitVersion) value="v$version" ;;
                    gitMajor) value=1 ;;
                    gitMinor) value=$minor ;;
                    gitTreeState) value=clean ;;
                    buildDate) value=$(date -u +%Y-%m-%dT%H:%M:%SZ) ;;
                esac
                ldflags+=" -X '$pkg.$key=$value'"
            done
        done
        for cmd in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
            echo "  go build k8s.io/kubernetes/cmd/$cmd" >&2
            CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/$cmd" \
                "k8s.io/kubernetes/cmd/$cmd"
        done
    )
}

# etcd's server module has a main package but replaces its sibling modules in its go.mod, so it is
# built as a `tool` of a wrapper module, which resolves those siblings at the same version.
build_etcd() {
    local out=$1 version=$2
    local src="$out/src"
    mkdir -p "$src"
    (
        set -euo pipefail
        cd "$src"
        go mod init trainctl.invalid/cluster/etcd >/dev/null 2>&1
        go get -tool "go.etcd.io/etcd/server/v3@v$version" >/dev/null 2>get.log \
            || { cat get.log >&2; exit 1; }
        CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$out/etcd" go.etcd.io/etcd/server/v3
    )
}

build_kwok() {
    local out=$1 version=$2
    CGO_ENABLED=0 GOBIN="$out" go install -trimpath -ldflags "-s -w" \
        "sigs.k8s.io/kwok/cmd/kwok@v$version"
}

# The upstream Kubeflow training operator, only for the comparisons of scripts/bench-cluster.
build_training_operator() {
    local out=$1 version=$2
    CGO_ENABLED=0 GOBIN="$out" go install -trimpath -ldflags "-s -w" \
        "github.com/kubeflow/training-operator/cmd/training-operator.v1@v$version"
}

# Kueue's manager (job queueing, the e2e suite's Kueue tests) and its CRDs, which come from the
# module's source that `go install` leaves in Go's module cache. Its go.mod has no replace
# directive.
build_kueue() {
    local out=$1 version=$2
    CGO_ENABLED=0 GOBIN="$out" go install -trimpath \
        -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=v$version" \
        "sigs.k8s.io/kueue/cmd/kueue@v$version"
    local module
    module="$(go env GOMODCACHE)/sigs.k8s.io/kueue@v$version"
    mkdir -p "$out/crds"
    cp "$module"/config/components/crd/bases/*.yaml "$out/crds/"
}
