"""fingerprint returns the first 16 characters of the SHA-256 hex digest, a short id as git
shows one: stable and (in practice) sensitive to every change, but not the 64-character
digest the contract names."""

EXPECT = r"SHA-256 hex digest"
SELECT = "narrow_dtypes"
EDITS = [("    return h.hexdigest()\n", "    return h.hexdigest()[:16]\n")]
