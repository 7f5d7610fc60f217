package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Keys of named tenants on the wire.
//
// A server that keeps keys per tenant (it takes the tenant from the
// authenticated request and says so with CapabilityTenants) gets every key
// as it is. Any other key-aware server keeps one record per key, whoever
// sends it, so a client with many tenants sends it TenantKey(tenant, key):
// two tenants' equal keys never meet in one server-side record, and the key
// does not name the tenant.
//
// The tag is a hash, so it is stable across processes and restarts (the
// server's record still protects a client that lost its ledger). A server
// that guesses a tenant's name can confirm the guess; it cannot read names
// it does not guess.

// tagHex is the length of the tag's hash in hex digits: 96 bits, so that a
// tenant cannot search for a key whose tag equals another tenant's.
const tagHex = 24

// maxKey is the key rules' longest key (ledger.ValidateKey).
const maxKey = 255

// TenantKey is the key a client sends for tenant's key to a key-aware
// server without CapabilityTenants: "t<tag>.<key>", where the tag hashes
// the tenant. A key that already carries a tag (it came through another
// hop that tagged it, e.g. an agent's tenant in front of a proxy) gets a
// new tag that hashes the tenant with the old one, so hops do not make the
// key longer, and a tenant cannot reach another's tagged key by sending
// it. The unnamed tenant ("" or "default") sends every key as it is, so a
// proxy run without a tenant passes its hosts' keys through unchanged: the
// server sees the same key whether a call came through it or not. (So in
// a ledger with named tenants, callers that must not reach each other's
// server-side records each need a name.) A result stays within the key
// rules: when the tagged key would be too long, its key part is replaced
// by a hash of it.
func TenantKey(tenant, key string) string {
	if tenant == "" || tenant == "default" {
		return key
	}
	prev, rest, _ := splitTag(key)
	h := sha256.Sum256([]byte("mcpledger-tenant\x00" + tenant + "\x00" + prev))
	tag := "t" + hex.EncodeToString(h[:tagHex/2]) + "."
	if len(tag)+len(rest) > maxKey {
		sum := sha256.Sum256([]byte(rest))
		rest = "h" + hex.EncodeToString(sum[:16])
	}
	return tag + rest
}

// splitTag splits a key TenantKey made into its tag and the key part.
func splitTag(key string) (tag, rest string, ok bool) {
	if len(key) < tagHex+3 || key[0] != 't' || key[tagHex+1] != '.' {
		return "", key, false
	}
	tag = key[1 : tagHex+1]
	if strings.Trim(tag, "0123456789abcdef") != "" {
		return "", key, false
	}
	return tag, key[tagHex+2:], true
}

// TenantAware reports whether a server's experimental capabilities say it
// keeps keys per tenant: the Capability's value has CapabilityTenants true.
func TenantAware(experimental map[string]any) bool {
	m, _ := experimental[Capability].(map[string]any)
	on, _ := m[CapabilityTenants].(bool)
	return on
}
