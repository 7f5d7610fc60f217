package wire_test

import (
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

func TestTenantKey(t *testing.T) {
	long := strings.Repeat("k", 255)
	keys := []string{"order-7", "a", long, "ns:op~1.2_3"}
	tenants := []string{"default", "acme", "globex", "acme-eu", "ACME"}
	seen := map[string]string{}
	for _, tn := range tenants {
		for _, k := range keys {
			w := wire.TenantKey(tn, k)
			if err := ledger.ValidateKey(w); err != nil {
				t.Fatalf("TenantKey(%q, %q) = %q breaks the key rules: %v", tn, k, w, err)
			}
			if w != wire.TenantKey(tn, k) {
				t.Fatalf("TenantKey(%q, %q) is not stable", tn, k)
			}
			if tn != "default" && strings.Contains(strings.ToLower(w), strings.ToLower(tn)) {
				t.Errorf("TenantKey(%q, %q) = %q names the tenant", tn, k, w)
			}
			if prev, dup := seen[w]; dup {
				t.Errorf("TenantKey(%q, %q) = %q, as for %s", tn, k, w, prev)
			}
			seen[w] = tn + "/" + k
		}
	}
	if got := wire.TenantKey("default", "order-7"); got != "order-7" {
		t.Errorf("default tenant's key on the wire = %q; want it as it is", got)
	}
	if got := wire.TenantKey("", "order-7"); got != "order-7" {
		t.Errorf("unnamed tenant's key on the wire = %q; want it as it is", got)
	}
}

// Through hops that tag (an agent's tenant, then a proxy's), the key keeps
// its length, each path is distinct, and a tenant cannot forge another's
// tagged key by sending it: its own tag is always mixed in.
func TestTenantKeyHops(t *testing.T) {
	a := wire.TenantKey("acme", "order-7")
	b := wire.TenantKey("globex", "order-7")
	pa, pb := wire.TenantKey("edge", a), wire.TenantKey("edge", b)
	if len(pa) != len(a) || !strings.HasSuffix(pa, ".order-7") {
		t.Fatalf("a second hop made %q of %q; want the same length and key part", pa, a)
	}
	if pa == pb || pa == a {
		t.Fatalf("two hops: %q and %q (from %q, %q); want distinct", pa, pb, a, b)
	}
	if forged := wire.TenantKey("globex", a); forged == a {
		t.Fatalf("globex sending acme's tagged key %q reaches acme's record", a)
	}
	if through := wire.TenantKey("default", a); through != a {
		t.Fatalf("a hop without a tenant made %q of %q; want it as it is", through, a)
	}
}

func TestTenantAware(t *testing.T) {
	for _, c := range []struct {
		exp  map[string]any
		want bool
	}{
		{nil, false},
		{map[string]any{wire.Capability: map[string]any{"version": 1}}, false},
		{map[string]any{wire.Capability: map[string]any{"version": 1, wire.CapabilityTenants: false}}, false},
		{map[string]any{wire.Capability: map[string]any{"version": 1, wire.CapabilityTenants: true}}, true},
		{map[string]any{wire.Capability: true}, false},
	} {
		if got := wire.TenantAware(c.exp); got != c.want {
			t.Errorf("TenantAware(%v) = %v; want %v", c.exp, got, c.want)
		}
	}
}

func FuzzTenantKey(f *testing.F) {
	f.Add("acme", "order-7")
	f.Add("default", "t000000000000000000000000.x")
	f.Fuzz(func(t *testing.T, tenant, key string) {
		if ledger.ValidateKey(key) != nil {
			return
		}
		w := wire.TenantKey(tenant, key)
		if err := ledger.ValidateKey(w); err != nil {
			t.Fatalf("TenantKey(%q, %q) = %q: %v", tenant, key, w, err)
		}
	})
}
