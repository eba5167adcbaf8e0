"""An independent verifier of Tidemark's signed compliance reports: Python's `cryptography`
(OpenSSL's Ed25519, not Tidemark's code) and `hashlib`. It is also the recipe docs/posture.md
gives auditors.

Usage: python3 verify_report.py KEYSET.json REPORT.json
  KEYSET.json  the installation's key set, as GET /v1/keys answers it (saved once)
  REPORT.json  the signed report (GET .../report?format=json, or the scan page's link)
Prints the verified report's text; exits 1 with the reason when it does not verify.
"""

import base64
import hashlib
import json
import sys

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def b64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def verify(key_set: dict, signed: dict) -> str:
    header_b64, payload_b64, signature_b64 = signed["signature"].split(".")
    header = json.loads(b64url(header_b64))
    if header.get("alg") != "EdDSA" or header.get("typ") != "tidemark-report+jwt":
        raise ValueError(f"not a report signature: {header}")
    jwk = next((k for k in key_set["keys"] if k["kid"] == header.get("kid")), None)
    if jwk is None or jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519":
        raise ValueError(f"no Ed25519 key {header.get('kid')} in the key set")
    public = Ed25519PublicKey.from_public_bytes(b64url(jwk["x"]))
    public.verify(b64url(signature_b64), f"{header_b64}.{payload_b64}".encode("ascii"))
    claims = json.loads(b64url(payload_b64))
    text = signed["report"]
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if digest != claims["report_sha256"]:
        raise ValueError(f"the report was changed: SHA-256 {digest}, signed {claims['report_sha256']}")
    report = json.loads(text)
    if f"{report['project']['id']}/{report['scan']['scan_id']}" != claims["sub"]:
        raise ValueError(f"the signature is for {claims['sub']}")
    return text


def main() -> int:
    with open(sys.argv[1], encoding="utf-8") as f:
        key_set = json.load(f)
    try:
        with open(sys.argv[2], encoding="utf-8") as f:
            signed = json.load(f)
        text = verify(key_set, signed)
    except (ValueError, InvalidSignature, KeyError, json.JSONDecodeError, UnicodeDecodeError) as err:
        print(f"not verified: {err or 'invalid signature'}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
