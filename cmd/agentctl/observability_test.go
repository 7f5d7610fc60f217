package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// dashboard is the part of Grafana's dashboard model (schemaVersion 39,
// https://grafana.com/docs/grafana/latest/dashboards/build-dashboards/view-dashboard-json-model/)
// that an import needs and that this test checks.
type dashboard struct {
	Title         string  `json:"title"`
	UID           string  `json:"uid"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Time          *struct {
		From string `json:"from"`
		To   string `json:"to"`
	} `json:"time"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID          int         `json:"id"`
	Type        string      `json:"type"`
	Title       string      `json:"title"`
	Description string      `json:"description"`
	Datasource  *datasource `json:"datasource"`
	GridPos     *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string      `json:"refId"`
		Expr       string      `json:"expr"`
		Datasource *datasource `json:"datasource"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

type datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func (d *dashboard) allPanels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

func readDashboard(t *testing.T) (*dashboard, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(observabilityDir, "grafana", "mcpledger.json"))
	if err != nil {
		t.Fatalf("reading the dashboard: %v", err)
	}
	var d dashboard
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("dashboard JSON: %v", err)
	}
	return &d, b
}

// TestDashboardModel checks the dashboard against Grafana's dashboard
// model as far as a test without Grafana can: the fields an import
// requires, known panel types, a grid that fits 24 columns without
// overlaps, a Prometheus data source variable that every panel and target
// uses (so the import asks which Prometheus), and a query in every target.
func TestDashboardModel(t *testing.T) {
	d, _ := readDashboard(t)
	if d.Title == "" || d.UID == "" || len(d.UID) > 40 {
		t.Errorf("title %q, uid %q; want both, the uid at most 40 characters", d.Title, d.UID)
	}
	if d.SchemaVersion < 36 {
		t.Errorf("schemaVersion = %d; want 36 or later (data source references by uid)", d.SchemaVersion)
	}
	if d.Time == nil || d.Time.From == "" || d.Time.To == "" {
		t.Errorf("time = %+v; want a default range", d.Time)
	}
	var dsVar bool
	for _, v := range d.Templating.List {
		if v.Name == "datasource" && v.Type == "datasource" && string(v.Query) == `"prometheus"` {
			dsVar = true
		}
	}
	if !dsVar {
		t.Errorf("templating has no variable datasource of type datasource with query prometheus")
	}
	known := map[string]bool{"row": true, "timeseries": true, "stat": true, "gauge": true, "bargauge": true, "table": true, "text": true}
	ids := map[int]string{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	refs, targets := 0, 0
	for _, p := range d.allPanels() {
		name := fmt.Sprintf("panel %d %q", p.ID, p.Title)
		if p.ID <= 0 || ids[p.ID] != "" {
			t.Errorf("%s: id missing or repeated (also %s)", name, ids[p.ID])
		}
		ids[p.ID] = name
		if !known[p.Type] {
			t.Errorf("%s: type %q is not a Grafana core panel type", name, p.Type)
		}
		if p.Title == "" {
			t.Errorf("%s: no title", name)
		}
		g := p.GridPos
		if g == nil || g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			t.Errorf("%s: gridPos %+v; want a box inside 24 columns", name, g)
			continue
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other := taken[cell{x, y}]; other != "" {
					t.Fatalf("%s overlaps %s at column %d, row %d", name, other, x, y)
				}
				taken[cell{x, y}] = name
			}
		}
		if p.Type == "row" || p.Type == "text" {
			continue
		}
		if p.Description == "" {
			t.Errorf("%s: no description saying what it is for", name)
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("%s: datasource %+v; want prometheus ${datasource}", name, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("%s: no targets", name)
		}
		seen := map[string]bool{}
		for _, tg := range p.Targets {
			targets++
			if tg.RefID == "" || seen[tg.RefID] {
				t.Errorf("%s: refId %q missing or repeated", name, tg.RefID)
			}
			seen[tg.RefID] = true
			if strings.TrimSpace(tg.Expr) == "" {
				t.Errorf("%s: target %s has no expr", name, tg.RefID)
			}
			if tg.Datasource != nil && tg.Datasource.UID == "${datasource}" {
				refs++
			}
		}
	}
	if refs != targets {
		t.Errorf("%d of %d targets use ${datasource}; want all", refs, targets)
	}
}

// promtool is Prometheus's own rule checker (Debian's prometheus package;
// .ci/run installs it). Without it these tests skip, except in CI, where
// its absence is a failure.
func promtool(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MCPLEDGER_PROMTOOL"); p != "" {
		return p
	}
	p, err := exec.LookPath("promtool")
	if err != nil && os.Getenv("CI") == "true" {
		t.Fatal("promtool is not installed, and CI must check the rules with it: .ci/run takes it from Debian's prometheus package")
	}
	if err != nil {
		t.Skip("promtool not found (Debian: apt-get install prometheus, or set MCPLEDGER_PROMTOOL)")
	}
	return p
}

// TestDashboardQueriesParse has Prometheus's own parser read every query
// of the dashboard: each becomes a recording rule of a rule file that
// promtool check rules reads, Grafana's variables replaced by what Grafana
// would put there.
func TestDashboardQueriesParse(t *testing.T) {
	bin := promtool(t)
	d, _ := readDashboard(t)
	grafana := strings.NewReplacer("$__rate_interval", "5m", "$__range", "6h", "$__interval", "1m", "$tool", ".*")
	var b strings.Builder
	b.WriteString("groups:\n  - name: dashboard\n    rules:\n")
	n := 0
	for _, p := range d.allPanels() {
		for _, tg := range p.Targets {
			n++
			q, err := json.Marshal(grafana.Replace(tg.Expr)) // a JSON string is a YAML string
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "      - record: dashboard:panel%d:%s\n        expr: %s\n", p.ID, tg.RefID, q)
		}
	}
	file := filepath.Join(t.TempDir(), "dashboard.rules.yml")
	if err := os.WriteFile(file, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "check", "rules", file).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("%d rules found", n)) {
		t.Fatalf("promtool check rules on the dashboard's %d queries: %v\n%s", n, err, out)
	}
}

// TestAlertRules runs promtool check rules and promtool test rules (the
// rule unit tests in alerts_test.yml) on the alert rules.
func TestAlertRules(t *testing.T) {
	bin := promtool(t)
	dir := filepath.Join(observabilityDir, "prometheus")
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
