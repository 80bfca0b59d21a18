"""fingerprint hashes its unambiguous encoding with md5 ("a fingerprint, not a signature"):
stable and sensitive to every change, but a 32-character md5 hex digest, not the SHA-256
digest the contract names (held-out round 14)."""

EXPECT = r"SHA-256 hex digest"
SELECT = "narrow_dtypes"
EDITS = [("    h = hashlib.sha256()\n", "    h = hashlib.md5()\n")]
