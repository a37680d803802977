# What the upstream Kubeflow training operator (built by `TRAINCTL_CLUSTER_UPSTREAM=1
# scripts/cluster build`) needs to run as a process beside the e2e control plane: its webhook
# server cannot be turned off and reads its serving certificates from controller-runtime's
# default folder. Sourced by scripts/bench-cluster and scripts/e2e.

# upstream_serving_certs: a self-signed pair in that folder, unless one is there already.
upstream_serving_certs() {
    local certs=/tmp/k8s-webhook-server/serving-certs
    if [[ ! -s "$certs/tls.crt" || ! -s "$certs/tls.key" ]]; then
        mkdir -p "$certs"
        openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj /CN=training-operator.kubeflow.svc \
            -keyout "$certs/tls.key" -out "$certs/tls.crt" 2>/dev/null
    fi
}
