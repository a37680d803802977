# The build that ships, for `source` by scripts/install and scripts/bench-run: the `dist`
# profile (Cargo.toml: one LTO-optimised unit), and on glibc Linux a static PIE.
#
# A static PIE starts without the dynamic loader (no shared libraries to map and bind), and keeps
# ASLR: `trainctl --version` takes 0.5 ms less CPU, and every command, the watchdog and the shim
# start that much sooner (BENCHMARKS.md, issue 4 (a)). Static linking must not reach the build's
# host tools (proc-macros are shared libraries), hence the explicit `--target`, which keeps the
# flag to the target's crates. The container image is static already (musl, deploy/Dockerfile).
#
# Sets `dist_args` (cargo's arguments) and `dist_binary` (the built binary, relative to the
# repository root).
host=$(rustc -vV | sed -n 's/^host: //p')
dist_args=(--locked --profile dist)
dist_binary=target/dist/trainctl
case "$host" in
    *-linux-gnu)
        dist_args+=(--target "$host" --config "target.$host.rustflags = ['-C', 'target-feature=+crt-static']")
        dist_binary=target/$host/dist/trainctl
        ;;
esac
