#!/usr/bin/env python3
"""Makes the TEST ONLY RSA keys of EMV offline data authentication (run once; the output is committed).

Writes, in Config/keys:
  ca-public-keys-test.json    the terminal's CA public keys (RID, index, modulus, exponent, expiry, checksum)
  emv-oda-test-private.json   the private halves the virtual cards sign with: one TEST CA key per scheme RID,
                              one CA key that no terminal lists (the "unknown CA index" case), one issuer key
                              and one ICC key.

These keys are generated here, for Proxima's tests and demo: they are NOT the schemes' published test keys and
not production keys. Checksum = SHA-1(RID || index || modulus || exponent) (EMV Book 2 §11.2.2, Annex B3).
"""
import hashlib
import json
import os
import sys

from cryptography.hazmat.primitives.asymmetric import rsa

KEYS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Config", "keys")

SCHEMES = [
    ("A000000003", "Visa"),
    ("A000000004", "Mastercard"),
    ("A000000025", "American Express"),
    ("A000000065", "JCB"),
    ("A000000152", "Discover"),
    ("A000000333", "UnionPay"),
]
CA_INDEX = "E1"
UNLISTED_INDEX = "E9"


def hexint(value, length):
    return value.to_bytes(length, "big").hex().upper()


def make(bits, exponent):
    key = rsa.generate_private_key(public_exponent=exponent, key_size=bits)
    numbers = key.private_numbers()
    length = bits // 8
    return {
        "modulus": hexint(numbers.public_numbers.n, length),
        "exponent": "03" if exponent == 3 else "010001",
        "privateExponent": hexint(numbers.d, length),
    }


def main():
    public = []
    private = {
        "comment": "TEST ONLY RSA keys for EMV offline data authentication in Proxima's virtual cards "
        "(scripts/make-emv-oda-test-keys.py). Never use for real cards. Published in this repository.",
        "certificationAuthorities": {},
        "issuers": {},
        "iccs": {},
    }
    for rid, scheme in SCHEMES:
        key = make(1408, 3)
        private["certificationAuthorities"][f"{rid}/{CA_INDEX}"] = key
        checksum = hashlib.sha1(
            bytes.fromhex(rid + CA_INDEX + key["modulus"] + key["exponent"])
        ).hexdigest().upper()
        public.append(
            {
                "rid": rid,
                "index": CA_INDEX,
                "modulus": key["modulus"],
                "exponent": key["exponent"],
                "expiry": "2035-12-31",
                "checksum": checksum,
                "comment": f"TEST ONLY CA key for {scheme} test cards (Proxima-generated, not the scheme's)",
            }
        )
    private["certificationAuthorities"][f"A000000003/{UNLISTED_INDEX}"] = make(1408, 3)
    private["issuers"]["issuer-1152"] = make(1152, 3)
    private["iccs"]["icc-1024"] = make(1024, 3)
    with open(os.path.join(KEYS, "ca-public-keys-test.json"), "w") as f:
        json.dump(
            {
                "comment": "TEST ONLY certification authority public keys for Proxima's virtual cards "
                "(scripts/make-emv-oda-test-keys.py). Not the schemes' keys: never configure them for real cards.",
                "keys": public,
            },
            f,
            indent=4,
        )
        f.write("\n")
    with open(os.path.join(KEYS, "emv-oda-test-private.json"), "w") as f:
        json.dump(private, f, indent=4)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
