# The e2e cluster's components: their command lines and how to tell that each is ready. Sourced by
# scripts/cluster; expects CLUSTER_DIR, the *_bin variables and the helpers of processes.sh and
# pki.sh.

# In start order; `down` stops them in the reverse one. COMPONENTS is what this cluster runs:
# these, and kueue when it is asked for (scripts/cluster's choose_components).
BASE_COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
COMPONENTS=("${BASE_COMPONENTS[@]}")

NODE_NAME=kwok-node-0
SERVICE_CIDR=10.96.0.0/16
# Kubernetes' own gang scheduling (alpha in 1.36): the Workload API and the pods'
# spec.schedulingGroup (GenericWorkload), the scheduler's all-or-nothing placement of a PodGroup
# (GangScheduling). Every component gets both: a gate is one flag for all of them.
FEATURE_GATES=GenericWorkload=true,GangScheduling=true

# kctl ARGS...: kubectl as the cluster's admin.
kctl() {
    "$kube_bin/kubectl" --kubeconfig "$CLUSTER_DIR/admin.kubeconfig" --request-timeout=10s "$@"
}

# configure: picks the ports and writes everything the components read (certificates,
# kubeconfigs, kwok's configuration) and their command lines, once per cluster: `start NAME`
# later reuses them, so that a restarted component comes back on the same ports.
configure() {
    local pki="$CLUSTER_DIR/pki"
    make_pki "$pki"

    local -a ports
    mapfile -t ports < <(free_ports 7)
    if [[ ${#ports[@]} -ne 7 ]]; then
        echo "could not pick 7 free ports on 127.0.0.1 (python3)" >&2
        return 1
    fi
    cat >"$CLUSTER_DIR/ports" <<EOF
etcd_port=${ports[0]}
etcd_peer_port=${ports[1]}
apiserver_port=${ports[2]}
kwok_port=${ports[3]}
kueue_webhook_port=${ports[4]}
kueue_health_port=${ports[5]}
kueue_metrics_port=${ports[6]}
EOF
    # shellcheck source=/dev/null
    source "$CLUSTER_DIR/ports"

    local server="https://127.0.0.1:$apiserver_port"
    local name
    for name in admin kube-controller-manager kube-scheduler; do
        write_kubeconfig "$CLUSTER_DIR/$name.kubeconfig" "$server" "$pki" "$name"
    done

    # etcd holds test data only: no fsync, which a 2-core machine's disk would feel.
    save_command etcd "$etcd_bin" \
        --name=trainctl-e2e \
        --data-dir="$CLUSTER_DIR/etcd" \
        --listen-client-urls="http://127.0.0.1:$etcd_port" \
        --advertise-client-urls="http://127.0.0.1:$etcd_port" \
        --listen-peer-urls="http://127.0.0.1:$etcd_peer_port" \
        --initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer_port" \
        --initial-cluster="trainctl-e2e=http://127.0.0.1:$etcd_peer_port" \
        --unsafe-no-fsync

    # The endpoint reconciler is off: it would write the advertised address, 127.0.0.1, into
    # the endpoints of the `kubernetes` Service, whose validation refuses loopback addresses. `kubectl logs`/`exec` go to the node's kubelet
    # endpoint, kwok's server: by InternalIP (127.0.0.1, the Hostname does not resolve), with a
    # certificate of the cluster's CA, as the admin (kwok accepts any client). On SIGTERM, the
    # open watches end after 2 s: otherwise it waits for them past `stop`'s 10 s.
    # The audit log (logs/audit.log) records who deleted each pod and when: a fault test that
    # finds a pod re-created once too often prints the deletions (e2e's `pod_deletions`).
    cat >"$CLUSTER_DIR/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
  resources: [{group: "", resources: [pods]}]
  verbs: [delete, deletecollection]
- level: None
EOF
    save_command kube-apiserver "$kube_bin/kube-apiserver" \
        --bind-address=127.0.0.1 \
        --audit-policy-file="$CLUSTER_DIR/audit-policy.yaml" \
        --audit-log-path="$CLUSTER_DIR/logs/audit.log" \
        --audit-log-maxsize=100 \
        --secure-port="$apiserver_port" \
        --advertise-address=127.0.0.1 \
        --endpoint-reconciler-type=none \
        --etcd-servers="http://127.0.0.1:$etcd_port" \
        --tls-cert-file="$pki/apiserver.crt" \
        --tls-private-key-file="$pki/apiserver.key" \
        --client-ca-file="$pki/ca.crt" \
        --authorization-mode=Node,RBAC \
        --allow-privileged=true \
        --service-cluster-ip-range="$SERVICE_CIDR" \
        --service-account-issuer=https://kubernetes.default.svc.cluster.local \
        --service-account-key-file="$pki/sa.pub" \
        --service-account-signing-key-file="$pki/sa.key" \
        --kubelet-client-certificate="$pki/admin.crt" \
        --kubelet-client-key="$pki/admin.key" \
        --kubelet-certificate-authority="$pki/ca.crt" \
        --kubelet-preferred-address-types=InternalIP \
        --shutdown-watch-termination-grace-period=2s \
        --feature-gates="$FEATURE_GATES" \
        --runtime-config=scheduling.k8s.io/v1alpha2=true

    # All default controllers (with the gates, the PodGroup protection one): the node lifecycle one takes the not-ready taint off the node,
    # the service-account ones make the `default` ServiceAccount and its tokens that pods need,
    # the garbage collector deletes what a deleted job owned. No HTTPS endpoint (secure port 0).
    save_command kube-controller-manager "$kube_bin/kube-controller-manager" \
        --kubeconfig="$CLUSTER_DIR/kube-controller-manager.kubeconfig" \
        --leader-elect=false \
        --secure-port=0 \
        --use-service-account-credentials=true \
        --service-account-private-key-file="$pki/sa.key" \
        --root-ca-file="$pki/ca.crt" \
        --cluster-signing-cert-file="$pki/ca.crt" \
        --cluster-signing-key-file="$pki/ca.key" \
        --service-cluster-ip-range="$SERVICE_CIDR" \
        --feature-gates="$FEATURE_GATES"

    save_command kube-scheduler "$kube_bin/kube-scheduler" \
        --kubeconfig="$CLUSTER_DIR/kube-scheduler.kubeconfig" \
        --leader-elect=false \
        --secure-port=0 \
        --feature-gates="$FEATURE_GATES"

    configure_kwok "$pki"
    if [[ " ${COMPONENTS[*]} " == *" kueue "* ]]; then
        configure_kueue "$pki"
    fi
}

# configure_kwok PKI_DIR: kwok plays the kubelet of every node annotated kwok.x-k8s.io/node=fake
# (the one `up` creates), by the Stages of scripts/lib/cluster/stages.yaml. Its server, the
# nodes' kubelet endpoint for `kubectl logs`, serves every container's log from one file.
configure_kwok() {
    local pki=$1
    mkdir -p "$CLUSTER_DIR/kwok"
    # CRI log format: time, stream, P(artial) or F(ull) line, text.
    local now
    now=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
    printf '%s stdout F %s\n' "$now" "trainctl e2e log line 1" "$now" "trainctl e2e log line 2" \
        >"$CLUSTER_DIR/kwok/pod.log"
    cat >"$CLUSTER_DIR/kwok/logs.yaml" <<EOF
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: every-pod
spec:
  logs:
  - logsFile: $CLUSTER_DIR/kwok/pod.log
    previousLogsFile: $CLUSTER_DIR/kwok/pod.log
EOF
    save_command kwok "$kwok_bin" \
        --kubeconfig="$CLUSTER_DIR/admin.kubeconfig" \
        --config="$repo/scripts/lib/cluster/stages.yaml" \
        --config="$CLUSTER_DIR/kwok/logs.yaml" \
        --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
        --node-ip=127.0.0.1 \
        --node-port="$kwok_port" \
        --server-address="127.0.0.1:$kwok_port" \
        --tls-cert-file="$pki/kwok.crt" \
        --tls-private-key-file="$pki/kwok.key" \
        --cidr=10.244.0.0/16
}

# create_node: the fake node, with the annotation kwok manages and no taint (the admission
# plugin TaintNodesByCondition adds the not-ready one, which kube-controller-manager takes off
# once kwok reports the node Ready).
create_node() {
    kctl apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Node
metadata:
  name: $NODE_NAME
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: $NODE_NAME
    kubernetes.io/os: linux
    type: kwok
EOF
}

# node_ready: the node is Ready and has no node.kubernetes.io/ taint left (not-ready,
# unreachable, ...), so that pods schedule onto it.
node_ready() {
    local state
    state=$(kctl get node "$NODE_NAME" \
        -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}/{.spec.taints[*].key}') || return 1
    [[ "$state" == True/* && "$state" != *node.kubernetes.io/* ]]
}

etcd_ready() {
    curl -sf --max-time 2 "http://127.0.0.1:$etcd_port/health" | grep -q '"health":"true"'
}

apiserver_ready() {
    local pki="$CLUSTER_DIR/pki"
    curl -sf --max-time 2 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
        "https://127.0.0.1:$apiserver_port/readyz" >/dev/null
}

kwok_ready() {
    curl -sf --max-time 2 "http://127.0.0.1:$kwok_port/healthz" >/dev/null
}

# start_ready NAME: starts NAME and waits until it serves. The controller manager and the
# scheduler serve nothing (secure port 0): `up` waits for what they do instead.
start_ready() {
    local name=$1
    # shellcheck source=/dev/null
    source "$CLUSTER_DIR/ports"
    echo "starting $name" >&2
    if [[ $name == kueue ]]; then
        install_kueue || return 1
    fi
    start_component "$name" || return 1
    case $name in
        etcd) wait_until "etcd's /health" 60 etcd_ready ;;
        kube-apiserver) wait_until "kube-apiserver's /readyz" 180 apiserver_ready ;;
        kwok) wait_until "kwok's /healthz" 60 kwok_ready ;;
        kueue) wait_until "kueue's /readyz" 120 kueue_ready ;;
    esac
}
