#!/usr/bin/env bash
# Airlock's copy of ../shared/tools/kube-env.sh, changed in one place: the
# kube-apiserver runs with --allow-privileged=true, as clusters that run
# privileged DaemonSets do (Airlock's node DaemonSet is privileged: see
# docs/KUBERNETES.md); without it the server refuses that DaemonSet even
# in a dry-run. Everything else is as the shared script has it.
# kube-env.sh: a throwaway Kubernetes control plane for tests (a real etcd plus a
# real kube-apiserver; no kubelet, scheduler or controller-manager).
#   kube-env.sh build      build kube-apiserver and etcd into $KUBE_ENV_CACHE (skip if cached)
#   kube-env.sh up DIR     start both on free 127.0.0.1 ports; writes DIR/kubeconfig, DIR/env
#   kube-env.sh down DIR   stop what `up DIR` started (by recorded PID) and remove DIR
# Pins (env overrides): KUBE_VERSION, ETCD_VERSION. Logs go to DIR/logs/.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
CACHE="${KUBE_ENV_CACHE:-/var/cache/kube-env}"
APISERVER="$CACHE/bin/kube-apiserver-$KUBE_VERSION"
ETCD="$CACHE/bin/etcd-$ETCD_VERSION"
export PATH="$PATH:/usr/local/go/bin" GOWORK=off CGO_ENABLED=0
# Default admission plugins turned off: those that need controllers we do not run (e.g.
# ServiceAccount) or only default/police pods and nodes. Kept: NamespaceLifecycle, webhooks, policies.
ADMISSION_OFF=ServiceAccount,LimitRanger,ResourceQuota,DefaultStorageClass,DefaultTolerationSeconds,\
PersistentVolumeClaimResize,StorageObjectInUseProtection,Priority,TaintNodesByCondition,RuntimeClass,\
CertificateApproval,CertificateSigning,ClusterTrustBundleAttest,CertificateSubjectRestriction,\
DefaultIngressClass,PodSecurity

usage() { echo "usage: $0 build | up DIR | down DIR  (see the comment at its top)" >&2; exit 2; }
die() { echo "kube-env: $*" >&2; exit 1; }

dl_gomod() { # dl_gomod DIR MOD@VER: download a module (3 tries), print the path of its go.mod
  local out f try
  [ -f "$1/go.mod" ] || echo "module kube-env/tmp" >"$1/go.mod"
  for try in 1 2 3; do  # on failure go prints the error only in the JSON's "Error" field
    out=$(cd "$1" && go mod download -json "$2" 2>&1) || true
    f=$(sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p' <<<"$out")
    [ -f "$f" ] && { echo "$f"; return 0; }
    sleep $((try * 3))
  done
  die "go mod download $2 failed: $(grep -E '"Error"|^go: ' <<<"$out")"
}

go_build() { # go_build MODDIR OUT PKG [ldflags]: build PKG within the wrapper module MODDIR
  local tmp="$2.tmp.$$" t0=$SECONDS
  (cd "$1" && go build -mod=mod -trimpath -ldflags "-s -w ${4:-}" -o "$tmp" "$3") \
    || (cd "$1" && go build -mod=mod -trimpath -ldflags "-s -w ${4:-}" -o "$tmp" "$3") \
    || { rm -f "$tmp"; die "go build of $3 failed twice (module in $1)"; }
  mv -f "$tmp" "$2"
  echo "kube-env: built $2 in $((SECONDS - t0))s" >&2
}

build_apiserver() {
  [ -x "$APISERVER" ] && return 0
  local mod="$CACHE/src/kube-apiserver-$KUBE_VERSION" v=${KUBE_VERSION#v} gomod
  mkdir -p "$mod"
  gomod=$(dl_gomod "$mod" "k8s.io/kubernetes@$KUBE_VERSION")
  # k8s.io/kubernetes replaces its staging modules (k8s.io/api, ...) with ./staging/...;
  # point every one it both requires and replaces at the published v0.X.Y instead.
  { echo "module kube-env/apiserver"; grep -E '^(go|godebug) ' "$gomod"
    echo "require k8s.io/kubernetes $KUBE_VERSION"
    awk -v sv="v0.${v#*.}" '
      /^require[ \t]*\(/ {q=1; next}  /^replace[ \t]*\(/ {r=1; next}  /^\)/ {q=r=0; next}
      q {req[$1]=1}
      r && $2 == "=>" && $3 ~ /^\.\/staging\// {rep[$1]=1}
      END {for (m in rep) if (m in req) print "replace " m " => " m " " sv}' "$gomod" | sort
  } >"$mod/go.mod"
  grep -q '^replace k8s.io/api ' "$mod/go.mod" || die "no staging replaces found in $gomod"
  local ld="" p minor=${v#*.}; minor=${minor%%.*}  # so that /version says $KUBE_VERSION
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld="$ld -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=${v%%.*} -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  echo "kube-env: building kube-apiserver $KUBE_VERSION (cold: tens of minutes on 2 cores)" >&2
  go_build "$mod" "$APISERVER" k8s.io/kubernetes/cmd/kube-apiserver "$ld"
}

build_etcd() {
  [ -x "$ETCD" ] && return 0
  local mod="$CACHE/src/etcd-$ETCD_VERSION" gomod
  mkdir -p "$mod"
  # go.etcd.io/etcd/server/v3 has `package main` at its root, but its go.mod has replaces,
  # so `go install` refuses it; building it from a wrapper module ignores those.
  gomod=$(dl_gomod "$mod" "go.etcd.io/etcd/server/v3@$ETCD_VERSION")
  { echo "module kube-env/etcd"; grep -E '^go ' "$gomod"
    echo "require go.etcd.io/etcd/server/v3 $ETCD_VERSION"; } >"$mod/go.mod"
  echo "kube-env: building etcd $ETCD_VERSION" >&2
  go_build "$mod" "$ETCD" go.etcd.io/etcd/server/v3
}

cmd_build() {
  command -v go >/dev/null || die "go not found in PATH"
  mkdir -p "$CACHE/bin"
  exec 9>"$CACHE/.build.lock"; flock 9   # one build at a time
  build_etcd; build_apiserver
}

port_free() { [ -z "$(ss -Htln "sport = :$1")" ] && ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
free_port() { # a free port below the ephemeral range, not one of $used
  local p i
  for i in $(seq 200); do
    p=$((20000 + RANDOM % 12000))
    [[ " $used " == *" $p "* ]] || ! port_free "$p" || { echo "$p"; return 0; }
  done
  die "no free port found"
}

alive() { [ -d "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" 2>/dev/null; }
ours() { local c; alive "$1" && c=$(tr '\0' ' ' <"/proc/$1/cmdline") 2>/dev/null && [[ $c == *"$2"* ]]; }

stop_pid() { # stop_pid PID DIR: TERM, wait up to 15s, then KILL; only if PID is still ours
  local pid=$1 i
  ours "$pid" "$2" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 150); do alive "$pid" || return 0; sleep 0.1; done
  echo "kube-env: PID $pid did not stop on TERM; killing" >&2
  kill -KILL "$pid" 2>/dev/null || true
  for i in $(seq 50); do alive "$pid" || return 0; sleep 0.1; done
  die "could not stop PID $pid"
}

start() { # start NAME DIR CMD...: detached, stdio to DIR/logs/NAME.log, pid to DIR/NAME.pid
  local name=$1 dir=$2; shift 2
  setsid bash -c 'echo $$ >"$0"; exec "$@"' "$dir/$name.pid" "$@" \
    </dev/null >>"$dir/logs/$name.log" 2>&1 &
  local i; for i in $(seq 100); do [ -s "$dir/$name.pid" ] && break; sleep 0.05; done
  [ -s "$dir/$name.pid" ] || die "$name did not start; see $dir/logs/$name.log"
  cat "$dir/$name.pid"
}

fail_up() {
  local dir=$1 f; shift
  echo "kube-env: up failed: $*" >&2
  for f in "$dir"/logs/*.log; do [ -f "$f" ] && { echo "--- tail $f" >&2; tail -n 20 "$f" >&2; }; done
  for f in kube-apiserver etcd; do [ -s "$dir/$f.pid" ] && stop_pid "$(cat "$dir/$f.pid")" "$dir"; done
  exit 1
}

cmd_up() {
  local dir=$1 t0=$SECONDS
  if [ -f "$dir/.kube-env" ]; then  # idempotent: keep a healthy env, replace a broken one
    dir=$(cd "$dir" && pwd)
    local pids ok=0 p; pids=$(sed -n 's/^KUBE_ENV_PIDS=//p' "$dir/env" 2>/dev/null | tr ',' ' ')
    [ -n "$pids" ] && ok=1; for p in $pids; do ours "$p" "$dir" || ok=0; done
    [ "$ok" = 1 ] && { echo "kube-env: already up in $dir" >&2; return 0; }
    cmd_down "$dir"
  fi
  [ ! -e "$dir" ] || [ -z "$(ls -A "$dir")" ] || die "$dir exists, is not empty and is not a kube-env dir"
  [ -x "$APISERVER" ] && [ -x "$ETCD" ] || (cmd_build)  # subshell: servers must not inherit the lock
  mkdir -p "$dir/logs" "$dir/pki"; dir=$(cd "$dir" && pwd)
  : >"$dir/.kube-env"
  local pki=$dir/pki token used="" cport pport sport
  # Self-signed CA, a serving cert for 127.0.0.1/localhost, a service-account key pair.
  {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
      -subj /CN=kube-env-ca -keyout "$pki/ca.key" -out "$pki/ca.crt"
    openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
      -subj /CN=kube-apiserver -keyout "$pki/apiserver.key" -out "$pki/apiserver.csr"
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$pki/ext.cnf"
    openssl x509 -req -in "$pki/apiserver.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
      -CAcreateserial -days 3650 -extfile "$pki/ext.cnf" -out "$pki/apiserver.crt"
    openssl genrsa -out "$pki/sa.key" 2048
    openssl rsa -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
  } >"$dir/logs/openssl.log" 2>&1 || fail_up "$dir" "openssl (see $dir/logs/openssl.log)"
  token=$(openssl rand -hex 24)
  echo "$token,admin,admin-uid,system:masters" >"$pki/tokens.csv"
  chmod 600 "$pki"/*.key "$pki/tokens.csv"
  cport=$(free_port); used="$cport"; pport=$(free_port); used="$used $pport"; sport=$(free_port)

  local epid apid
  epid=$(start etcd "$dir" "$ETCD" --name kube-env --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$cport" --advertise-client-urls "http://127.0.0.1:$cport" \
    --listen-peer-urls "http://127.0.0.1:$pport" --initial-advertise-peer-urls "http://127.0.0.1:$pport" \
    --initial-cluster "kube-env=http://127.0.0.1:$pport" --unsafe-no-fsync --log-level warn) \
    || fail_up "$dir" "etcd start"
  local i; for i in $(seq 100); do
    [[ $(curl -s "http://127.0.0.1:$cport/health" 2>/dev/null) == *'"health":"true"'* ]] && break
    alive "$epid" || fail_up "$dir" "etcd exited"
    [ "$i" = 100 ] && fail_up "$dir" "etcd not healthy after 10s"
    sleep 0.1
  done
  apid=$(start kube-apiserver "$dir" "$APISERVER" \
    --etcd-servers "http://127.0.0.1:$cport" --bind-address 127.0.0.1 --secure-port "$sport" \
    --advertise-address 127.0.0.1 --tls-cert-file "$pki/apiserver.crt" \
    --tls-private-key-file "$pki/apiserver.key" --token-auth-file "$pki/tokens.csv" \
    --authorization-mode RBAC --service-account-issuer https://kubernetes.default.svc \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-cluster-ip-range 10.96.0.0/12 --endpoint-reconciler-type none --profiling=false \
    --disable-admission-plugins "$ADMISSION_OFF" --allow-privileged=true) || fail_up "$dir" "kube-apiserver start"
  for i in $(seq 600); do
    [ "$(curl -s --cacert "$pki/ca.crt" -H "Authorization: Bearer $token" \
      "https://127.0.0.1:$sport/readyz" 2>/dev/null)" = ok ] && break
    alive "$apid" || fail_up "$dir" "kube-apiserver exited"
    [ "$i" = 600 ] && fail_up "$dir" "kube-apiserver not ready after 60s"
    sleep 0.1
  done
  cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: kube-env, cluster: {server: "https://127.0.0.1:$sport", certificate-authority-data: $(base64 -w0 "$pki/ca.crt")}}]
users: [{name: admin, user: {token: $token}}]
contexts: [{name: kube-env, context: {cluster: kube-env, user: admin, namespace: default}}]
current-context: kube-env
EOF
  cat >"$dir/env" <<EOF
KUBECONFIG=$dir/kubeconfig
KUBE_ENV_PIDS=$apid,$epid
KUBE_ENV_SERVER=https://127.0.0.1:$sport
KUBE_ENV_TOKEN=$token
KUBE_ENV_CA=$pki/ca.crt
KUBE_ENV_ETCD=http://127.0.0.1:$cport
EOF
  echo "kube-env: up in $((SECONDS - t0))s: apiserver https://127.0.0.1:$sport; source $dir/env" >&2
}

cmd_down() {
  local dir=$1 p
  [ -e "$dir" ] || return 0
  [ -f "$dir/.kube-env" ] || die "$dir has no .kube-env marker; not removing it"
  dir=$(cd "$dir" && pwd)
  for p in $(sed -n 's/^KUBE_ENV_PIDS=//p' "$dir/env" 2>/dev/null | tr ',' ' ') \
    $(cat "$dir/kube-apiserver.pid" "$dir/etcd.pid" 2>/dev/null); do
    stop_pid "$p" "$dir"
  done
  rm -rf "$dir"
}

case "${1:-}" in
  build) [ $# = 1 ] || usage; cmd_build ;;
  up) [ $# = 2 ] || usage; cmd_up "$2" ;;
  down) [ $# = 2 ] || usage; cmd_down "$2" ;;
  *) usage ;;
esac
