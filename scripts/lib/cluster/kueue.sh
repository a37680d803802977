# Kueue beside the e2e control plane (TRAINCTL_CLUSTER_KUEUE=1): its manager as a process on
# 127.0.0.1 with the kubeflow.org job integrations on, its CRDs, and its admission webhooks for
# those jobs, which the API server calls on loopback. Sourced by scripts/cluster; expects
# CLUSTER_DIR, kueue_dir, KUEUE_VERSION and the helpers of processes.sh, pki.sh and
# components.sh.
#
# Why a process and not Kueue's Deployment: kwok runs no container. Why webhooks and not jobs
# created suspended: users of a real cluster never write `suspend: true`, Kueue's mutating
# webhook does it for them, and the e2e suite should see what they see. The webhooks select
# only jobs labelled with a queue (an objectSelector Kueue's own manifests do not have), so
# that the other tests' jobs never wait on them.
#
# Kueue without its internal certificate management (which needs a Secret mounted in a pod)
# reads its metrics certificate from a fixed path, /etc/kueue/metrics/certs. Rather than write
# into the machine's /etc, the manager runs in a mount namespace of its own (and a user
# namespace, so that no privilege is needed) whose /etc is an overlay holding that folder.

# The kubeflow.org kinds Kueue integrates with at kubeflow.org/v1 (its MPIJob integration is
# mpi-operator's v2beta1, not the v1 MPIJob).
KUEUE_KINDS=(pytorchjob tfjob paddlejob xgboostjob jaxjob)

# kueue_enabled: whether this cluster runs Kueue: asked for at `up`, remembered by its folder.
kueue_enabled() {
    [[ -f "$CLUSTER_DIR/cmd/kueue" ]] \
        || { [[ ! -f "$CLUSTER_DIR/ports" ]] && [[ "${TRAINCTL_CLUSTER_KUEUE:-}" == 1 ]]; }
}

# configure_kueue PKI_DIR: its serving certificate (webhooks and metrics), its configuration,
# the overlay's upper folder, and its command line.
configure_kueue() {
    local pki=$1
    local dir="$CLUSTER_DIR/kueue"
    mkdir -p "$dir/certs" "$dir/etc-upper/kueue/metrics/certs" "$dir/etc-work"
    issue_cert "$pki" kueue "/CN=kueue-webhook" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost"
    cp "$pki/kueue.crt" "$dir/certs/tls.crt"
    cp "$pki/kueue.key" "$dir/certs/tls.key"
    cp "$dir/certs/tls.crt" "$dir/certs/tls.key" "$dir/etc-upper/kueue/metrics/certs/"
    local frameworks="" kind
    for kind in "${KUEUE_KINDS[@]}"; do frameworks+="kubeflow.org/$kind, "; done
    cat >"$dir/config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
manageJobsWithoutQueueName: false
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
webhook: {host: 127.0.0.1, port: $kueue_webhook_port, certDir: $dir/certs}
metrics: {bindAddress: "127.0.0.1:$kueue_metrics_port"}
health: {healthProbeBindAddress: "127.0.0.1:$kueue_health_port"}
# The on-demand visibility API is an aggregated API server of its own: not needed here.
featureGates: {VisibilityOnDemand: false}
integrations:
  frameworks: [${frameworks%, }]
EOF
    save_wrapper kueue unshare --mount --map-root-user --propagation private -- \
        bash "$repo/scripts/lib/cluster/overlay-etc" "$dir/etc-upper" "$dir/etc-work"
    save_command kueue "$kueue_dir/kueue" \
        --config="$dir/config.yaml" \
        --kubeconfig="$CLUSTER_DIR/admin.kubeconfig" \
        --zap-log-level=2
}

# install_kueue: what the manager needs from the API server before it starts: its CRDs, its
# namespace, and the webhook configurations for the kubeflow.org jobs.
install_kueue() {
    kctl apply --server-side -f "$kueue_dir/crds" >/dev/null
    kctl wait --for condition=established --timeout 60s -f "$kueue_dir/crds" >/dev/null
    kctl create namespace kueue-system --dry-run=client -o yaml | kctl apply -f - >/dev/null
    local kind mutating="" validating=""
    for kind in "${KUEUE_KINDS[@]}"; do
        mutating+=$(kueue_webhook "m$kind.kb.io" "/mutate-kubeflow-org-v1-$kind" "${kind}s" CREATE)
        mutating+=$'\n'
        validating+=$(kueue_webhook "v$kind.kb.io" "/validate-kubeflow-org-v1-$kind" "${kind}s" \
            CREATE,UPDATE)
        validating+=$'\n'
    done
    kctl apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: kueue-mutating-webhook-configuration}
webhooks:
$mutating
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: kueue-validating-webhook-configuration}
webhooks:
$validating
EOF
}

# kueue_webhook NAME PATH RESOURCE OPERATIONS: one webhook of a configuration (a YAML list
# item), called on loopback, for the jobs labelled with a queue only.
kueue_webhook() {
    local name=$1 path=$2 resource=$3 operations=$4 ca
    ca=$(base64 -w0 <"$CLUSTER_DIR/pki/ca.crt")
    cat <<EOF
- name: $name
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  objectSelector: {matchExpressions: [{key: kueue.x-k8s.io/queue-name, operator: Exists}]}
  clientConfig: {url: "https://127.0.0.1:$kueue_webhook_port$path", caBundle: "$ca"}
  rules: [{apiGroups: [kubeflow.org], apiVersions: [v1], operations: [$operations], resources: [$resource]}]
EOF
}

kueue_ready() {
    curl -sf --max-time 2 "http://127.0.0.1:$kueue_health_port/readyz" >/dev/null
}
