package confirm

// Hints are a tool's annotations (MCP's ToolAnnotations) in SDK-free terms:
// each adapter translates its SDK's annotations into them. A nil field is
// "not said" and the MCP default applies (not read-only, destructive, not
// idempotent, open world); a nil *Hints is "no annotations at all", which
// the policy treats as nothing known.
type Hints struct {
	Title                                        string
	ReadOnly, Destructive, Idempotent, OpenWorld *bool
}
