"""An independent verifier of Tidemark's signed verdicts: Python `cryptography` (OpenSSL's
Ed25519, not our code) checks a compact JWS against the published key set.

Usage: python3 verify_verdict.py KEYSET.json JWS
Prints the verified payload as JSON; exits 1 with the reason when it does not verify.
"""

import base64
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def main() -> int:
    keys_path, jws = sys.argv[1], sys.argv[2]
    with open(keys_path, encoding="utf-8") as f:
        key_set = json.load(f)
    try:
        header_b64, payload_b64, signature_b64 = jws.split(".")
        header = json.loads(b64url(header_b64))
        if header.get("alg") != "EdDSA":
            raise ValueError(f"alg {header.get('alg')} is not EdDSA")
        jwk = next((k for k in key_set["keys"] if k["kid"] == header.get("kid")), None)
        if jwk is None or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
            raise ValueError(f"no Ed25519 key {header.get('kid')} in the key set")
        public = Ed25519PublicKey.from_public_bytes(b64url(jwk["x"]))
        public.verify(b64url(signature_b64), f"{header_b64}.{payload_b64}".encode("ascii"))
    except (ValueError, InvalidSignature, KeyError) as err:
        print(f"cryptography: {err or 'invalid signature'}", file=sys.stderr)
        return 1
    sys.stdout.write(b64url(payload_b64).decode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
