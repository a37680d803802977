# The build that ships, for `source` by scripts/install and scripts/bench-run: the `dist`
# profile (Cargo.toml: one LTO-optimised unit), and on glibc Linux a static executable.
#
# Static: no dynamic loader, no shared libraries to map and bind at each start. Not
# position-independent (`-C relocation-model=static`), as Go builds the Kubernetes tools: a PIE
# applies its 22,000 relocations at every start, writing private copies of 96 pages, and so does
# each watchdog trainctl starts. `trainctl --version` takes 0.81 ms of CPU and 129 page faults
# against 1.04 ms and 239 for the static PIE, the 16-replica run 11.6 against 13.0 ms
# (BENCHMARKS.md, issue 4 (a)). The stack, heap and every mapping are still randomised, the
# executable's own image is not. TRAINCTL_PIE=1 builds the static PIE instead (full ASLR).
#
# Static linking must not reach the build's host tools (proc-macros are shared libraries), hence
# the explicit `--target`, which keeps the flags to the target's crates. The container image is
# static already (musl, deploy/Dockerfile).
#
# Sets `dist_args` (cargo's arguments) and `dist_binary` (the built binary, relative to the
# repository root).
host=$(rustc -vV | sed -n 's/^host: //p')
dist_args=(--locked --profile dist)
dist_binary=target/dist/trainctl
case "$host" in
    *-linux-gnu)
        rustflags="'-C', 'target-feature=+crt-static'"
        if [[ "${TRAINCTL_PIE:-}" != 1 ]]; then
            rustflags+=", '-C', 'relocation-model=static'"
        fi
        dist_args+=(--target "$host" --config "target.$host.rustflags = [$rustflags]")
        dist_binary=target/$host/dist/trainctl
        ;;
esac
