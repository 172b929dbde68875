package postgres

import (
	"testing"

	"github.com/cosid-go/store/internal/testing/leakcheck"
	"github.com/cosid-go/store/internal/testing/pgtest"
)

func TestMain(m *testing.M) { leakcheck.VerifyTestMain(pgtest.Wrap(m)) }
