package sqlsource_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mcpledger/mcpledger/internal/sqlsource"
)

// Read finds the constants and functions that hold SQL of records or
// events, and a function's inline literals, and leaves out tests and SQL
// of other tables.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"store.go": "package store\n\nconst getRecord = `SELECT * FROM records WHERE key = $1`\n\nconst other = `SELECT 1 FROM schema_migrations`\n\n" +
			"func purge() { run(\"DELETE FROM events WHERE at < $1\", \"UPDATE records SET x = 1\") }\n\nfunc run(...string) {}\n",
		"store_test.go": "package store\n\nconst inTest = `SELECT * FROM records`\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	src, err := sqlsource.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(dir, "store.go")
	if want := map[string]string{"getRecord": store, "purge": store}; !reflect.DeepEqual(src.Holders, want) {
		t.Errorf("Holders = %v; want %v", src.Holders, want)
	}
	if want := map[string][]string{"purge": {"DELETE FROM events WHERE at < $1", "UPDATE records SET x = 1"}}; !reflect.DeepEqual(src.Literals, want) {
		t.Errorf("Literals = %v; want %v", src.Literals, want)
	}
}
