#!/usr/bin/env bash
# Regenerates the TEST certificates of the remote-reader link (Config/keys/remote-*-test*): a store CA, the store's
# server certificate, an agent certificate, an agent certificate from another CA, an expired agent certificate, and
# the store CA's revocation list (remote-store-ca-test-crl.pem), which revokes lane-pc-2's (remote-agent-2-test.pem).
# TEST material only: the private keys are committed on purpose and must never be used in a store.
# Validity: 2026-01-01 to 2126-01-01 (100 years), except the expired agent's (2020-01-01 to 2021-01-01).
# Usage: scripts/make-remote-test-certs.sh [--crl-only]   (needs the openssl command, Debian package `openssl`)
#   --crl-only: only remakes the revocation list from the committed store CA (its nextUpdate is 2126).
set -euo pipefail
cd "$(dirname "$0")/../Config/keys"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; chmod 0600 "$1"; }

# `openssl ca` is the one command of OpenSSL 3.0 that takes explicit start and end dates.
sign() { # sign <ca-name> <csr> <out> <start> <end> <extensions>
    local ca=$1 csr=$2 out=$3 start=$4 end=$5 ext=$6
    mkdir -p "$work/$ca"
    : >"$work/$ca/index.txt"
    [ -f "$work/$ca/serial" ] || openssl rand -hex 16 >"$work/$ca/serial"
    cat >"$work/$ca.cnf" <<CNF
[ ca ]
default_ca = this
[ this ]
database = $work/$ca/index.txt
serial = $work/$ca/serial
new_certs_dir = $work/$ca
certificate = remote-$ca-test.pem
private_key = remote-$ca-test-private.pem
default_md = sha256
policy = anything
unique_subject = no
copy_extensions = none
[ anything ]
commonName = supplied
organizationName = optional
organizationalUnitName = optional
[ server ]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost, DNS:store.proxima.test, IP:127.0.0.1
[ agent ]
basicConstraints = critical, CA:false
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
subjectAltName = DNS:\${ENV::AGENT}.agents.proxima.test
CNF
    openssl ca -batch -notext -config "$work/$ca.cnf" -in "$csr" -out "$out" -startdate "$start" -enddate "$end" \
        -extensions "$ext" 2>/dev/null
}

ca() { # ca <name> <common name>
    key "remote-$1-test-private.pem"
    openssl req -new -x509 -key "remote-$1-test-private.pem" -out "remote-$1-test.pem" -subj "/O=Proxima TEST/CN=$2" \
        -days 36525 -sha256 -addext "basicConstraints=critical,CA:true" -addext "keyUsage=critical,keyCertSign,cRLSign"
}

# The store CA's CRL, revoking lane-pc-2's certificate: `openssl ca -revoke` enters it in an empty database.
crl() {
    mkdir -p "$work/store-ca"
    : >"$work/store-ca/index.txt"
    echo 01 >"$work/store-ca/crlnumber"
    cat >"$work/crl.cnf" <<CNF
[ ca ]
default_ca = this
[ this ]
database = $work/store-ca/index.txt
crlnumber = $work/store-ca/crlnumber
certificate = remote-store-ca-test.pem
private_key = remote-store-ca-test-private.pem
default_md = sha256
default_crl_days = 36500
CNF
    openssl ca -batch -config "$work/crl.cnf" -revoke remote-agent-2-test.pem -crl_reason keyCompromise 2>/dev/null
    openssl ca -batch -config "$work/crl.cnf" -gencrl -out remote-store-ca-test-crl.pem 2>/dev/null
}
if [ "${1:-}" = "--crl-only" ]; then
    crl
    echo "make-remote-test-certs: wrote Config/keys/remote-store-ca-test-crl.pem"
    exit 0
fi

ca store-ca "Proxima TEST store CA"
ca rogue-ca "Proxima TEST rogue CA"

key remote-server-test-private.pem
openssl req -new -key remote-server-test-private.pem -subj "/O=Proxima TEST/CN=store.proxima.test" -out "$work/server.csr"
AGENT=server sign store-ca "$work/server.csr" remote-server-test.pem 20260101000000Z 21260101000000Z server

agent() { # agent <file stem> <agent name> <ca> <start> <end>
    key "remote-$1-test-private.pem"
    openssl req -new -key "remote-$1-test-private.pem" -subj "/O=Proxima TEST/CN=$2" -out "$work/$1.csr"
    AGENT=$2 sign "$3" "$work/$1.csr" "remote-$1-test.pem" "$4" "$5" agent
}
agent agent lane-pc-1 store-ca 20260101000000Z 21260101000000Z
agent agent-2 lane-pc-2 store-ca 20260101000000Z 21260101000000Z
agent rogue-agent lane-pc-1 rogue-ca 20260101000000Z 21260101000000Z
agent expired-agent lane-pc-1 store-ca 20200101000000Z 20210101000000Z
crl
rm -f remote-rogue-ca-test-private.pem.srl
echo "make-remote-test-certs: wrote $(ls remote-*-test*.pem | wc -l) files in Config/keys"
