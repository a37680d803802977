# Certificates and kubeconfigs of the e2e cluster, made with openssl. Sourced by scripts/cluster.
#
# One CA signs everything: the apiserver's and kwok's serving certificates and the clients'
# certificates, whose subject is what RBAC sees (CN the user, O the group). The keys are ECDSA
# P-256 (instant to make), except the service-account signing key, RSA as most token consumers
# expect RS256.

# issue_cert DIR NAME SUBJECT EXTENSIONS: a key and a certificate signed by DIR/ca, valid a year.
issue_cert() {
    local dir=$1 name=$2 subject=$3 extensions=$4
    openssl ecparam -name prime256v1 -genkey -noout -out "$dir/$name.key" 2>/dev/null
    openssl req -new -key "$dir/$name.key" -subj "$subject" -out "$dir/$name.csr"
    printf '%s\n' "$extensions" >"$dir/$name.ext"
    openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
        -CAcreateserial -days 365 -sha256 -extfile "$dir/$name.ext" -out "$dir/$name.crt" 2>/dev/null
    rm -f "$dir/$name.csr" "$dir/$name.ext"
}

# make_pki DIR: every certificate and key the components need.
make_pki() {
    local dir=$1
    mkdir -p "$dir"
    openssl ecparam -name prime256v1 -genkey -noout -out "$dir/ca.key" 2>/dev/null
    openssl req -x509 -new -key "$dir/ca.key" -subj "/CN=trainctl-e2e-ca" -days 365 -sha256 \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" \
        -out "$dir/ca.crt"

    local server="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth"
    local client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
    # The names by which clients reach the apiserver: loopback here, the in-cluster ones for
    # pods that read their service-account kubeconfig (10.96.0.1 is the `kubernetes` Service).
    issue_cert "$dir" apiserver "/CN=kube-apiserver" "$server
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local,IP:10.96.0.1"
    # kwok's server is the node's kubelet endpoint: the apiserver verifies it against the CA.
    issue_cert "$dir" kwok "/CN=kwok-node-0" "$server
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kwok-node-0"
    issue_cert "$dir" admin "/O=system:masters/CN=trainctl-e2e-admin" "$client"
    issue_cert "$dir" kube-controller-manager "/CN=system:kube-controller-manager" "$client"
    issue_cert "$dir" kube-scheduler "/CN=system:kube-scheduler" "$client"

    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$dir/sa.key" 2>/dev/null
    openssl pkey -in "$dir/sa.key" -pubout -out "$dir/sa.pub"
    chmod 600 "$dir"/*.key
}

# write_kubeconfig FILE SERVER PKI_DIR NAME: a kubeconfig for the client certificate NAME, with
# everything embedded, so that it can be copied elsewhere on the machine.
write_kubeconfig() {
    local file=$1 server=$2 dir=$3 name=$4
    cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: trainctl-e2e
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 <"$dir/ca.crt")
users:
- name: $name
  user:
    client-certificate-data: $(base64 -w0 <"$dir/$name.crt")
    client-key-data: $(base64 -w0 <"$dir/$name.key")
contexts:
- name: trainctl-e2e
  context:
    cluster: trainctl-e2e
    user: $name
current-context: trainctl-e2e
EOF
    chmod 600 "$file"
}
