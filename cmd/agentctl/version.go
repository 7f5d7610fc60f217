package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is the release this source tree will be; a binary built from a
// tagged module (go install …@v0.1.0) reports the tag instead.
const version = "0.1.0"

func init() { register(newVersionCmd) }

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print agentctl's version, the Go version it was built with, and its source revision",
		Example: `  agentctl version
  agentctl version --json`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			if a.json {
				return a.printJSON(buildVersion())
			}
			a.printf("agentctl %s\n", versionText())
			return nil
		}),
	}
}

// versionInfo is what version prints.
type versionInfo struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
	Platform string `json:"platform"`
}

// buildVersion reads the module version and VCS stamp from the build
// info. `go install …@vX` stamps the tag; a build from a clone says
// "(devel)", or, when go stamps it from git, a pseudo-version of no tag
// (v0.0.0-TIME-REV); then the source's own version stands, marked as a
// development build, with the revision beside it.
func buildVersion() versionInfo {
	v := versionInfo{Version: version + "-dev", Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if mv := info.Main.Version; mv != "" && mv != "(devel)" && !strings.HasPrefix(mv, "v0.0.0-") {
		v.Version = mv
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// versionText is the one line of --version and version.
func versionText() string {
	v := buildVersion()
	s := v.Version
	if v.Revision != "" {
		rev := v.Revision[:min(12, len(v.Revision))]
		if v.Modified {
			rev += ", modified"
		}
		s += " (" + rev + ")"
	}
	return fmt.Sprintf("%s %s %s", s, v.Go, v.Platform)
}
