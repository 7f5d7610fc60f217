package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// MaxKeyLen is the longest key (and tenant) in bytes.
const MaxKeyLen = 255

var errEmptyTool = errors.New("ledger: tool name is empty")

// ValidateKey checks the key rules: 1 to 255 bytes of [A-Za-z0-9._:~-].
// The error wraps ErrInvalidKey and names the first offending byte.
func ValidateKey(key string) error {
	return validateName(key, "key", ErrInvalidKey)
}

// The layers of the adapters: whose record a record is. A ledger used by
// one layer alone may leave the layer empty.
const (
	// LayerClient: an agent's client (the go-sdk and mcp-go wrappers,
	// agentctl call).
	LayerClient = "client"
	// LayerProxy: agentctl proxy, in front of an MCP server.
	LayerProxy = "proxy"
	// LayerServer: a server guard, behind the tools it protects.
	LayerServer = "server"
)

// MaxLayerLen is the longest layer name in bytes.
const MaxLayerLen = 64

// ValidateLayer applies the key rules to a layer name, which may be empty
// and is at most MaxLayerLen bytes.
func ValidateLayer(layer string) error {
	if layer == "" {
		return nil
	}
	if len(layer) > MaxLayerLen {
		return fmt.Errorf("%w: layer is %d bytes; the limit is %d", ErrInvalidLayer, len(layer), MaxLayerLen)
	}
	return validateName(layer, "layer", ErrInvalidLayer)
}

// ValidateTenant applies the key rules to a tenant name.
func ValidateTenant(tenant string) error {
	return validateName(tenant, "tenant", ErrInvalidTenant)
}

func validateName(s, what string, sentinel error) error {
	if len(s) == 0 {
		return fmt.Errorf("%w: empty %s; want 1-%d bytes of [A-Za-z0-9._:~-]", sentinel, what, MaxKeyLen)
	}
	if len(s) > MaxKeyLen {
		return fmt.Errorf("%w: %s is %d bytes; the limit is %d", sentinel, what, len(s), MaxKeyLen)
	}
	for i := 0; i < len(s); i++ {
		if !keyByte(s[i]) {
			return fmt.Errorf("%w: byte 0x%02x at offset %d of the %s; allowed are [A-Za-z0-9._:~-]", sentinel, s[i], i, what)
		}
	}
	return nil
}

func keyByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '.', '_', ':', '~', '-':
		return true
	}
	return false
}

// DeriveKey derives the key of a call from its chain id, tool and argument
// fingerprint, so a replayed chain derives the same keys. The result always
// satisfies the key rules and reveals nothing of its inputs.
func DeriveKey(chain, tool, fingerprint string) string {
	h := sha256.New()
	for _, part := range []string{chain, tool, fingerprint} {
		// Length prefixes keep ("ab","c") and ("a","bc") apart.
		fmt.Fprintf(h, "%d:%s;", len(part), part)
	}
	return "k1." + hex.EncodeToString(h.Sum(nil)[:16])
}

// ShortHash is how logs show a key: the first 12 hex digits of its SHA-256.
func ShortHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:6])
}
