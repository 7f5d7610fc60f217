package retry_test

import (
	"os"
	"testing"

	"github.com/mcpledger/mcpledger/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.RunIfChild()
	os.Exit(m.Run())
}
