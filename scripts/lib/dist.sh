# The build that ships, for `source` by scripts/install and scripts/bench-run: the `dist`
# profile (Cargo.toml: one LTO-optimised unit), and on glibc Linux a static PIE.
#
# Static: no dynamic loader, no shared libraries to map and bind at each start. Position-
# independent, so that the executable's own image is randomised with its stack, heap and
# mappings (full ASLR): a safety no user should trade for a start-up cost no training job
# notices. TRAINCTL_NO_PIE=1 builds it not position-independent (`-C relocation-model=static`,
# as Go builds the Kubernetes tools) for those who want the last millisecond: a PIE applies its
# relocations at every start, and so does each watchdog trainctl starts (BENCHMARKS.md has the
# figures).
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
        if [[ "${TRAINCTL_NO_PIE:-}" == 1 ]]; then
            rustflags+=", '-C', 'relocation-model=static'"
        fi
        dist_args+=(--target "$host" --config "target.$host.rustflags = [$rustflags]")
        dist_binary=target/$host/dist/trainctl
        ;;
esac
